// OpenID Connect sign-in as the console sees it: the gateway's /auth/oidc routes do the
// flow, then send the browser back to /signin with the outcome in the URL fragment (never
// sent to a server, so no access log holds the token). This reads that fragment.
import { parseRole } from "./roles";
import type { Session } from "./session";

/** Where a "Sign in with <label>" link sends the browser: the gateway's start route. */
export function startPath(provider: string): string {
  return `/auth/oidc/${encodeURIComponent(provider)}/start`;
}

/** What the /signin fragment says: a session, a refusal in words, or nothing of ours. */
export type SignInOutcome =
  | { kind: "session"; session: Session; provider: string }
  | { kind: "refused"; message: string }
  | null;

/** What the gateway's refusal reasons mean when it gave no message of its own. */
const reasonWords: Record<string, string> = {
  invalid_state: "this sign-in was not begun in this browser, or was already completed",
  invalid_provider: "the sign-in named no provider this console knows",
  provider_failed: "the provider did not sign you in",
  internal_error: "the sign-in failed inside Plinth",
};

// A token, names and ids have bounds; a fragment is typed by anyone, so quote little of it.
const maxField = 4096;

/**
 * Reads the gateway's /signin fragment (location.hash, with or without its "#"): a token
 * with its expiry, account, username, role and provider, or an error reason with auth's
 * message. Anything else — no fragment, an unknown shape, a token without an expiry — is
 * null or a refusal in words, never a half session.
 */
export function parseSignInFragment(hash: string): SignInOutcome {
  const raw = hash.startsWith("#") ? hash.slice(1) : hash;
  if (raw === "") return null;
  let f: URLSearchParams;
  try {
    f = new URLSearchParams(raw);
  } catch {
    return null;
  }
  const get = (k: string) => (f.get(k) ?? "").slice(0, maxField);
  if (f.has("error")) {
    const reason = get("error");
    const message = get("message").trim().replace(/[.\s]+$/, "");
    const why = message || reasonWords[reason] || `the sign-in failed (${reason.slice(0, 64) || "no reason given"})`;
    return { kind: "refused", message: `Sign-in refused: ${why}.` };
  }
  if (!f.has("token")) return null;
  const token = get("token");
  const expires = get("expires_at");
  const expiresAt = /^\d{1,16}$/.test(expires) ? Number(expires) : NaN;
  if (token === "" || !Number.isSafeInteger(expiresAt)) {
    return { kind: "refused", message: "Sign-in refused: the provider's answer reached the console incomplete. Sign in again." };
  }
  return {
    kind: "session",
    provider: get("provider"),
    session: { token, expiresAt, accountId: get("account_id"), username: get("username"), role: parseRole(get("role")) },
  };
}
