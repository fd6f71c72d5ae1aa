// View logic of the Admin page (auth's plinth.auth.v1.AdminService): input checked as auth
// checks it, users accumulated page by page, and the refusal a non-admin gets in words.
import { Code, ConnectError } from "@connectrpc/connect";
import type { ListUsersResponse, User } from "../gen/plinth/auth/v1/admin_pb";
import { parseRole, roleDescription, type Role } from "./roles";

/** Users per ListUsers page. */
export const pageSize = 100;

/** The sentence shown instead of the page to a user without admin rights. */
export const needAdminRights = "You need admin rights to manage users: your role is not admin. Ask an admin to give you the admin role.";

/** Whether a failure means the caller is signed in but not an admin. */
export function isPermissionDenied(err: unknown): boolean {
  return ConnectError.from(err).code === Code.PermissionDenied;
}

/** The problem with a username in words, or "" (auth's rule: 3–24 of [a-zA-Z0-9-_]). */
export function usernameProblem(username: string): string {
  if (username.length < 3 || username.length > 24) return "The username has 3 to 24 characters.";
  if (!/^[a-zA-Z0-9_-]+$/.test(username)) return "The username has only letters, digits, '-' and '_'.";
  return "";
}

/** The problem with a new password in words, or "". Empty means "let auth generate one". */
export function passwordProblem(password: string): string {
  if (password === "") return "";
  if ([...password].length < 6) return "The password has at least 6 characters (or leave it empty to generate one).";
  if (new TextEncoder().encode(password).length > 70) return "The password has at most 70 bytes.";
  return "";
}

/** Users so far plus the next page, by username, without duplicates (a user listed twice when
 * a page boundary moved keeps its newest state). */
export function appendPage(users: User[], page: ListUsersResponse): User[] {
  const byId = new Map(users.map((u) => [u.id, u]));
  for (const u of page.users) byId.set(u.id, u);
  return [...byId.values()].sort((a, b) => a.username.toLowerCase().localeCompare(b.username.toLowerCase()));
}

/** Whether u is the signed-in user (usernames are case-insensitive); auth refuses to let an
 * admin disable their own account, so the page does not offer it. */
export function isMe(u: User, me: string): boolean {
  return u.username.toLowerCase() === me.toLowerCase();
}

/** A user's state for the table: its words and badge level. */
export function userState(u: User): { text: string; level: "ok" | "err" } {
  return u.disabled ? { text: "Disabled", level: "err" } : { text: "Enabled", level: "ok" };
}

/** What an action did, in words; a generated password is part of it (shown once). */
export function outcome(what: "created" | "reset", username: string, generated: string): string {
  const head = what === "created" ? `Created ${username}.` : `Password of ${username} reset; their tokens are revoked.`;
  // The password itself is shown beside this, with its copy button (ui.tsx SecretValue).
  return generated ? `${head} Generated password (shown once, copy it now):` : head;
}

/** The confirmation question before an action that signs a user out, or "" for none. */
export function confirmQuestion(action: "disable" | "enable" | "revoke" | "reset", username: string): string {
  switch (action) {
    case "disable":
      return `Disable ${username}? They are signed out everywhere and cannot sign in.`;
    case "revoke":
      return `Sign ${username} out everywhere (revoke all their tokens)?`;
    case "reset":
      return `Reset the password of ${username}? They are signed out everywhere.`;
    default:
      return "";
  }
}

/** A user's role as the table shows it: auth's role, or for an auth older than roles the admin
 * flag (admin, else operator, which is what such a user may do). */
export function userRole(u: User): Exclude<Role, ""> {
  return parseRole(u.role) || (u.admin ? "admin" : "operator");
}

/** The question before giving username another role (it signs them out everywhere). */
export function roleQuestion(username: string, role: Exclude<Role, "">): string {
  return `Make ${username} ${role === "admin" ? "an" : "a"} ${role} (${roleDescription[role]})? They are signed out everywhere and sign in again with the new role.`;
}
