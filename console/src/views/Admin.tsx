// Admin (auth's plinth.auth.v1.AdminService): the users of the suite with their roles, create
// one with a role, change a role, disable or enable, reset a password, sign a user out
// everywhere. Non-admins get a plain refusal.
import { useState, type FormEvent } from "react";
import { Code, type Client } from "@connectrpc/connect";
import type { AdminService, User } from "../gen/plinth/auth/v1/admin_pb";
import { appendPage, confirmQuestion, isMe, needAdminRights, outcome, pageSize, passwordProblem, roleQuestion, userRole, userState, usernameProblem } from "../lib/admin";
import { roleDescription, roles, type Role } from "../lib/roles";
import { timestampMs, when } from "../lib/format";
import { usePoll, useAction } from "../lib/hooks";
import { DoneLine, ErrorLine, Loading, Panel, Refreshed, TableWrap } from "./ui";

type AdminClient = Client<typeof AdminService>;

/** Loads the first `pages` pages of users; more is true when a further page exists. */
async function loadUsers(admin: AdminClient, pages: number, signal: AbortSignal): Promise<{ users: User[]; more: boolean }> {
  let users: User[] = [];
  let token = "";
  for (let i = 0; i < pages; i++) {
    const page = await admin.listUsers({ pageSize, pageToken: token }, { signal });
    users = appendPage(users, page);
    token = page.nextPageToken;
    if (!token) break;
  }
  return { users, more: token !== "" };
}

export function Admin({ admin, me }: { admin: AdminClient; me: string }) {
  const [pages, setPages] = useState(1);
  const list = usePoll((signal) => loadUsers(admin, pages, signal), 15000, [admin, pages]);
  const [resetFor, setResetFor] = useState("");
  const act = useAction();
  if (list.code === Code.PermissionDenied) {
    return (
      <>
        <div className="page-head"><h1>Admin</h1></div>
        <p className="notice" role="status">{needAdminRights}</p>
      </>
    );
  }
  const change = (action: "disable" | "enable" | "revoke", u: User) => {
    const q = confirmQuestion(action, u.username);
    if (q && !window.confirm(q)) return;
    void act.run(async () => {
      if (action === "revoke") {
        const r = await admin.revokeUserTokens({ username: u.username });
        await list.reload();
        return `Revoked ${r.revokedTokens} token(s) of ${u.username}.`;
      }
      await admin.setUserDisabled({ username: u.username, disabled: action === "disable" });
      await list.reload();
      return `${action === "disable" ? "Disabled" : "Enabled"} ${u.username}.`;
    });
  };
  const setRole = (u: User, role: Exclude<Role, "">) => {
    if (role === userRole(u) || !window.confirm(roleQuestion(u.username, role))) return;
    void act.run(async () => {
      const r = await admin.setUserRole({ username: u.username, role });
      await list.reload();
      return `${u.username} is now ${r.user ? userRole(r.user) : role}.`;
    });
  };
  return (
    <>
      <div className="page-head">
        <h1>Admin</h1>
        <Refreshed at={list.at} loading={list.loading} onReload={list.reload} />
      </div>
      <ErrorLine text={list.error} details={list.details} />
      <CreateUser admin={admin} onCreated={list.reload} />
      <Loading loading={list.loading} has={list.data !== undefined} what="users">
        <Panel title="Users" id="users">
          {list.data?.users.length === 0 ? <p className="muted">No users.</p> : (
            <TableWrap>
              <table>
                <thead><tr><th scope="col">Username</th><th scope="col">State</th><th scope="col">Role</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead>
                <tbody>
                  {list.data?.users.map((u) => {
                    const st = userState(u);
                    return (
                      <tr key={u.id} data-user={u.username}>
                        <td>{u.username}</td>
                        <td><span className={`badge ${st.level}`}>{st.text}</span></td>
                        <td>
                          <select name="user-role" aria-label={`Role of ${u.username}`} value={userRole(u)} disabled={act.busy || isMe(u, me)}
                            title={isMe(u, me) ? "You cannot change your own role" : undefined}
                            onChange={(e) => setRole(u, e.target.value as Exclude<Role, "">)}>
                            {roles.map((r) => <option key={r} value={r}>{r}</option>)}
                          </select>
                        </td>
                        <td className="small-text">{when(timestampMs(u.createTime))}</td>
                        <td className="actions">
                          {u.disabled
                            ? <button type="button" className="small" disabled={act.busy} onClick={() => change("enable", u)}>Enable</button>
                            : <button type="button" className="small danger" disabled={act.busy || isMe(u, me)} title={isMe(u, me) ? "You cannot disable your own account" : undefined} onClick={() => change("disable", u)}>Disable</button>}
                          <button type="button" className="small" aria-expanded={resetFor === u.username} onClick={() => setResetFor(resetFor === u.username ? "" : u.username)}>Reset password</button>
                          <button type="button" className="small" disabled={act.busy} onClick={() => change("revoke", u)}>Revoke tokens</button>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableWrap>
          )}
          {list.data?.more && <button type="button" className="small" onClick={() => setPages(pages + 1)} disabled={list.loading}>Show more users</button>}
          <ErrorLine text={act.error} details={act.details} />
          <DoneLine text={act.done} />
        </Panel>
      </Loading>
      {resetFor && <ResetPassword admin={admin} username={resetFor} onClose={() => setResetFor("")} />}
    </>
  );
}

function CreateUser({ admin, onCreated }: { admin: AdminClient; onCreated: () => void }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [role, setRole] = useState<Exclude<Role, "">>("operator");
  const [problem, setProblem] = useState("");
  const [generated, setGenerated] = useState("");
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = usernameProblem(username) || passwordProblem(password);
    setProblem(p);
    setGenerated("");
    if (p) return;
    const ok = await act.run(async () => {
      const r = await admin.createUser({ username, password, role });
      onCreated();
      setGenerated(r.generatedPassword);
      return outcome("created", r.user?.username ?? username, r.generatedPassword);
    });
    if (ok) {
      setUsername("");
      setPassword("");
      setRole("operator");
    }
  };
  return (
    <Panel title="Create a user" id="create-user">
      <form onSubmit={submit} className="row wrap" noValidate>
        <label>Username<input name="new-username" autoComplete="off" value={username} onChange={(e) => setUsername(e.target.value)} required /></label>
        <label>Password (empty: generate)<input name="new-password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} /></label>
        <label>Role
          <select name="new-role" value={role} onChange={(e) => setRole(e.target.value as Exclude<Role, "">)}>
            {roles.map((r) => <option key={r} value={r}>{r}: {roleDescription[r]}</option>)}
          </select>
        </label>
        <button type="submit" disabled={act.busy}>{act.busy ? "Creating…" : "Create user"}</button>
      </form>
      <ErrorLine text={problem || act.error} details={problem ? "" : act.details} />
      <DoneLine text={act.done} secret={generated} />
    </Panel>
  );
}

function ResetPassword({ admin, username, onClose }: { admin: AdminClient; username: string; onClose: () => void }) {
  const [password, setPassword] = useState("");
  const [problem, setProblem] = useState("");
  const [generated, setGenerated] = useState("");
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = passwordProblem(password);
    setProblem(p);
    setGenerated("");
    if (p || !window.confirm(confirmQuestion("reset", username))) return;
    const ok = await act.run(async () => {
      const r = await admin.resetPassword({ username, password });
      setGenerated(r.generatedPassword);
      return outcome("reset", username, r.generatedPassword);
    });
    if (ok) setPassword("");
  };
  return (
    <Panel title={`Reset the password of ${username}`} id="reset-password" actions={<button type="button" className="small" onClick={onClose}>Close</button>}>
      <form onSubmit={submit} className="row wrap" noValidate>
        <label>New password (empty: generate)<input name="reset-password" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} /></label>
        <button type="submit" disabled={act.busy}>{act.busy ? "Resetting…" : "Reset password"}</button>
      </form>
      <ErrorLine text={problem || act.error} details={problem ? "" : act.details} />
      <DoneLine text={act.done} secret={generated} />
    </Panel>
  );
}
