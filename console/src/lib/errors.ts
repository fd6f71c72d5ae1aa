// Errors in plain words: what the service said (the gRPC status message), and what the user
// can do about the kinds of failure that are not theirs to fix.
import { Code, ConnectError } from "@connectrpc/connect";

/** A failure as a view shows it: one sentence of cause and next step, and the raw words. */
export interface Explanation {
  text: string;
  /** What the service said, when text does not already say it ("" when it does). */
  details: string;
}

/** Whether a transport message only says the network failed (nothing worth showing). */
const networkOnly = /^(fetch failed|Failed to fetch|network ?error|Load failed)/i;

/** A message as a sentence: first letter up, a full stop at the end. */
function sentence(msg: string): string {
  const s = msg.charAt(0).toUpperCase() + msg.slice(1);
  return /[.!?)]$/.test(s) ? s : `${s}.`;
}

/**
 * Explains a failed call. A refusal of the request (invalid, not found, exists, not now,
 * not allowed) is the service's own sentence: it names the field and the value. A failure
 * that is not the user's (unreachable, too slow, broken) gets a fixed sentence saying what to
 * do, with the service's raw words as details.
 */
export function explainError(err: unknown): Explanation {
  const e = ConnectError.from(err);
  const msg = e.rawMessage.trim();
  const raw = networkOnly.test(msg) ? "" : msg;
  switch (e.code) {
    case Code.Unavailable:
      return { text: "The service cannot be reached right now. Try again shortly; if it goes on, check that the suite is running (make up).", details: raw };
    case Code.Unimplemented:
      return { text: "This is not available in the running suite.", details: raw };
    case Code.DeadlineExceeded:
      return { text: "The service took too long to answer. Try again.", details: raw };
    case Code.Canceled:
      return { text: "The request was canceled.", details: raw };
    case Code.ResourceExhausted:
      return { text: "The service is busy or a limit was reached. Wait a moment and try again.", details: raw };
    case Code.Internal:
    case Code.Unknown:
    case Code.DataLoss:
      return { text: "The service failed unexpectedly. Try again; if it goes on, the service's log says why.", details: raw };
    case Code.PermissionDenied:
      return refusedByRole(msg);
    default:
      return { text: msg ? sentence(fieldInWords(msg)) : `${codeName(e.code)}.`, details: "" };
  }
}

/** How the services word a role's refusal (libs/platform/authz): the role, the RPC path, the kind. */
const roleRefusal = /^role (\w+) may not call \S+ \((\w+)\)/i;

/**
 * A PermissionDenied in words: what the role may not do and whom to ask, never the RPC path
 * the service named (kept under details).
 */
function refusedByRole(msg: string): Explanation {
  const m = roleRefusal.exec(msg);
  if (!m) return { text: msg ? sentence(fieldInWords(msg)) : "Permission denied.", details: "" };
  const [, role, kind] = m;
  const text = kind.toLowerCase() === "admin"
    ? `Your role (${role.toLowerCase()}) cannot do this: it needs the admin role.`
    : `Your role (${role.toLowerCase()}) can look but not change anything. Ask an admin for the operator role.`;
  return { text, details: msg };
}

/**
 * A message that starts with the request field it is about, in words: the services name fields
 * as proto paths ("Backup.data_source.s3.path: …", "k8s_version: …"); people read "S3 path: …".
 */
export function fieldInWords(msg: string): string {
  const m = /^((?:[A-Z][A-Za-z0-9]*\.)?[a-z][a-z0-9_]*(?:\[\d+\])?(?:\.[a-z][a-z0-9_]*(?:\[\d+\])?)*): (.*)$/s.exec(msg);
  if (!m) return msg;
  const segments = m[1].split(".").filter((s) => !/^[A-Z]/.test(s)).map((s) => s.replace(/\[(\d+)\]$/, " $1"));
  const last = segments[segments.length - 1].replace(/_/g, " ");
  const before = segments.length > 1 ? segments[segments.length - 2] : "";
  // A short qualifier (s3, tls) says which of two same-named fields it is.
  const words = before.length > 0 && before.length <= 3 ? `${before.toUpperCase()} ${last}` : last;
  return `${words.charAt(0).toUpperCase()}${words.slice(1)}: ${m[2]}`;
}

/** The sentence a view shows for a failed call (explainError without the details). */
export function describeError(err: unknown): string {
  return explainError(err).text;
}

/** Whether the failure means the token is not (or no longer) accepted. */
export function isUnauthenticated(err: unknown): err is ConnectError {
  return err instanceof ConnectError && err.code === Code.Unauthenticated;
}

/** A readable name of a status code ("Not found"). */
export function codeName(code: Code): string {
  const name = Code[code] ?? "Unknown";
  return name.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/^./, (c) => c.toUpperCase()).replace(/ ([A-Z])/g, (m) => m.toLowerCase());
}
