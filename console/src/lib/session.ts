// The signed-in session: the auth token lives in sessionStorage (per tab, never a cookie or
// localStorage), with its expiry, so a reload keeps the user signed in; other tabs get it from
// an open one (lib/tabs.ts), and closing the last tab ends it.
import { parseRole, type Role } from "./roles";

/** What the console remembers about a sign-in. */
export interface Session {
  token: string;
  /** When auth stops accepting the token, in ms since the epoch (0: unknown). */
  expiresAt: number;
  accountId: string;
  username: string;
  /** The user's role when signing in ("" when auth did not say); a role change revokes the
   * user's tokens, so it holds for the session's life. */
  role: Role;
}

const sessionKey = "plinth.session";
const reasonKey = "plinth.signout-reason";

/** The subset of the Web Storage API the session needs (tests pass a Map-backed one). */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Reads the session; an expired or malformed one is removed and answered as null. */
export function loadSession(store: KeyValueStore, now: number): Session | null {
  const raw = store.getItem(sessionKey);
  if (!raw) return null;
  let s: Partial<Session> | null;
  try {
    s = JSON.parse(raw) as Partial<Session> | null;
  } catch {
    s = null;
  }
  if (!s || typeof s !== "object" || typeof s.token !== "string" || s.token === "" || typeof s.expiresAt !== "number") {
    store.removeItem(sessionKey);
    return null;
  }
  if (isExpired(s.expiresAt, now)) {
    endSession(store, "Your session expired. Sign in again.");
    return null;
  }
  return {
    token: s.token,
    expiresAt: s.expiresAt,
    accountId: s.accountId ?? "",
    username: s.username ?? "",
    role: parseRole(s.role),
  };
}

/** Whether a session expiring at expiresAt is over at now; 0 means the expiry is unknown. */
export function isExpired(expiresAt: number, now: number): boolean {
  return expiresAt > 0 && now >= expiresAt;
}

/** Keeps a new session and clears the message of the previous sign-out. */
export function saveSession(store: KeyValueStore, s: Session): void {
  store.setItem(sessionKey, JSON.stringify(s));
  store.removeItem(reasonKey);
}

/** Forgets the session; reason, when given, is shown on the sign-in page. */
export function endSession(store: KeyValueStore, reason?: string): void {
  store.removeItem(sessionKey);
  if (reason) store.setItem(reasonKey, reason);
  else store.removeItem(reasonKey);
}

/** The message of the last sign-out, if any. */
export function signOutReason(store: KeyValueStore): string {
  return store.getItem(reasonKey) ?? "";
}

/** Milliseconds until expiry at now, or null when the expiry is unknown. */
export function msUntilExpiry(s: Session, now: number): number | null {
  return s.expiresAt > 0 ? Math.max(0, s.expiresAt - now) : null;
}

/** The sign-in page's message when a service refused the token with message msg. */
export function refusedMessage(msg: string): string {
  const why = msg.trim().replace(/[.\s]+$/, "");
  return why ? `You were signed out: ${why}.`.replace(/!\.$/, "!") : "You were signed out: your token is no longer accepted. Sign in again.";
}
