// Sign in with a user of the auth service.
import { useState, type FormEvent } from "react";
import type { Client } from "@connectrpc/connect";
import type { AuthService } from "../gen/services/auth/auth_pb";
import { timestampMs } from "../lib/format";
import { describeError } from "../lib/errors";
import { validateLogin } from "../lib/auth";
import type { Session } from "../lib/session";
import { fetchRole, type Role } from "../lib/roles";
import { ErrorLine } from "./ui";

export function SignIn({ auth, message, onSignedIn }: {
  auth: Client<typeof AuthService>;
  message: string;
  onSignedIn: (s: Session) => void;
}) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const problem = validateLogin(username, password);
    if (problem) {
      setError(problem);
      return;
    }
    setBusy(true);
    setError("");
    try {
      const r = await auth.login({ username, password });
      // The role decides which actions the pages offer; not knowing it offers them all (the
      // services still refuse what the role may not do).
      const role = await fetchRole(auth, r.token).catch((): Role => "");
      onSignedIn({ token: r.token, expiresAt: timestampMs(r.expires?.timestamp), accountId: r.accountId, username, role });
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="signin" id="main">
      <form onSubmit={submit} aria-labelledby="signin-h" noValidate>
        <h1 id="signin-h">Plinth</h1>
        <p className="muted">Sign in with your Plinth account.</p>
        {message && <p className="notice" role="status">{message}</p>}
        <label>
          Username
          <input name="username" autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} autoFocus required />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        </label>
        <ErrorLine text={error} />
        <button type="submit" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
      </form>
    </main>
  );
}
