// What the signed-in user's role lets the console offer. The services enforce roles (the
// gateway and each service's interceptor refuse a call with PermissionDenied); the console only
// hides or disables what would be refused, so a viewer is not offered buttons that fail.
import type { Client } from "@connectrpc/connect";
import type { AuthService } from "../gen/services/auth/auth_pb";

/** A Plinth role (auth's plinth.auth.v1.User.role); "" when the console does not know it. */
export type Role = "viewer" | "operator" | "admin" | "";

/** Every role, least rights first, as auth names them. */
export const roles: Exclude<Role, "">[] = ["viewer", "operator", "admin"];

/** The response header in which auth's CheckToken names the token's role. */
export const roleHeader = "plinth-account-role";

/** What each role may do, in words (the Admin page's choice of role). */
export const roleDescription: Record<Exclude<Role, "">, string> = {
  viewer: "reads only",
  operator: "everything but user administration",
  admin: "everything",
};

/** A role as auth names it, or "" for anything else. */
export function parseRole(s: string | null | undefined): Role {
  const r = (s ?? "").trim().toLowerCase();
  return (roles as string[]).includes(r) ? (r as Role) : "";
}

/** Whether the role may change things (create, delete, scale…). An unknown role may: the
 * services decide, and a console that cannot tell must not hide what an operator needs. */
export function canWrite(role: Role): boolean {
  return role !== "viewer";
}

/** Whether the role may administer users. Unknown: the Admin page asks auth and shows its answer. */
export function canAdminister(role: Role): boolean {
  return role === "admin" || role === "";
}

/** The line a viewer sees where write actions would be. */
export const readOnlyNotice = "You can look but not change anything here: your role is viewer (reads only). Ask an admin for the operator role.";

/** The role of token, as auth's CheckToken names it in its response header; "" when auth does
 * not say (an older auth) or the token is not live. */
export async function fetchRole(auth: Client<typeof AuthService>, token: string, signal?: AbortSignal): Promise<Role> {
  let role: Role = "";
  const r = await auth.checkToken({ token }, { signal, onHeader: (h) => { role = parseRole(h.get(roleHeader)); } });
  return r.success ? role : "";
}
