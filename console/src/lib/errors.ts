// Errors in plain words: what the service said (the gRPC status message), and what the user
// can do about the kinds of failure that are not theirs to fix.
import { Code, ConnectError } from "@connectrpc/connect";

/** The sentence a view shows for a failed call. */
export function describeError(err: unknown): string {
  const e = ConnectError.from(err);
  const msg = e.rawMessage.trim();
  switch (e.code) {
    case Code.Unavailable:
      return msg && !/^(fetch failed|Failed to fetch|network ?error)/i.test(msg)
        ? `The service is unavailable: ${msg}. Try again shortly.`
        : "The service cannot be reached. Is the suite running (make up)? Try again shortly.";
    case Code.Unimplemented:
      return msg ? `Not available here: ${msg}` : "This service is not part of the running suite.";
    case Code.DeadlineExceeded:
      return "The service took too long to answer. Try again.";
    case Code.Canceled:
      return "The request was canceled.";
    case Code.Internal:
    case Code.Unknown:
      return msg ? `The service failed: ${msg}` : "The service failed unexpectedly.";
    default:
      return msg || codeName(e.code);
  }
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
