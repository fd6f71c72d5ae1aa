// One sign-in for every tab of the console, without storing the token beyond the tabs' own
// sessionStorage: a new tab asks the open ones (a BroadcastChannel, same origin only) for
// their session and keeps it in its own sessionStorage; a sign-out in one tab ends the
// session in all of them. Closing the last tab still ends it: nothing is on disk.
import { isExpired, type Session } from "./session";
import { parseRole } from "./roles";

/** The channel's name (one per origin). */
export const channelName = "plinth.session";

/** What tabs tell each other. */
export type TabMessage =
  | { type: "ask" }
  | { type: "session"; session: Session }
  /** token: the session that ended (a tab signed in with another one keeps it). */
  | { type: "signed-out"; reason: string; token: string };

/** The subset of BroadcastChannel the sharing needs (tests pass a fake). */
export interface Channel {
  postMessage(m: TabMessage): void;
  addEventListener(type: "message", fn: (e: { data: unknown }) => void): void;
  removeEventListener(type: "message", fn: (e: { data: unknown }) => void): void;
}

/** A message another tab sent, or null for anything else (checked: any script of the origin
 * may post on the channel). */
export function parseTabMessage(data: unknown): TabMessage | null {
  if (!data || typeof data !== "object") return null;
  const m = data as Record<string, unknown>;
  switch (m.type) {
    case "ask":
      return { type: "ask" };
    case "signed-out":
      if (typeof m.token !== "string" || m.token === "") return null;
      return { type: "signed-out", reason: typeof m.reason === "string" ? m.reason : "", token: m.token };
    case "session": {
      const s = m.session as Partial<Session> | null;
      if (!s || typeof s !== "object" || typeof s.token !== "string" || s.token === "" || typeof s.expiresAt !== "number") return null;
      return {
        type: "session",
        session: {
          token: s.token,
          expiresAt: s.expiresAt,
          accountId: typeof s.accountId === "string" ? s.accountId : "",
          username: typeof s.username === "string" ? s.username : "",
          role: parseRole(s.role),
        },
      };
    }
  }
  return null;
}

/** How long a new tab waits for an open one to answer (they answer at once when open). */
export const askWaitMs = 300;

/**
 * Asks the other tabs for their session: the first live one that answers within waitMs, or
 * null (no other tab is signed in).
 */
export function askOtherTabs(ch: Channel, now: () => number, waitMs = askWaitMs): Promise<Session | null> {
  return new Promise((resolve) => {
    const onMessage = (e: { data: unknown }) => {
      const m = parseTabMessage(e.data);
      if (m?.type === "session" && !isExpired(m.session.expiresAt, now())) done(m.session);
    };
    const timer = setTimeout(() => done(null), waitMs);
    function done(s: Session | null) {
      clearTimeout(timer);
      ch.removeEventListener("message", onMessage);
      resolve(s);
    }
    ch.addEventListener("message", onMessage);
    ch.postMessage({ type: "ask" });
  });
}

/** What a signed-in tab does with a message from another tab. */
export type TabAction = { kind: "answer"; session: Session } | { kind: "adopt"; session: Session } | { kind: "end"; reason: string } | { kind: "none" };

/**
 * Decides what to do with m, given this tab's session (null: signed out): answer an ask with
 * the session, adopt a session another tab signed in with while this one has none, end this
 * tab's session when another tab signed out of the same one.
 */
export function onTabMessage(m: TabMessage | null, mine: Session | null, now: number): TabAction {
  if (!m) return { kind: "none" };
  switch (m.type) {
    case "ask":
      return mine && !isExpired(mine.expiresAt, now) ? { kind: "answer", session: mine } : { kind: "none" };
    case "session":
      return !mine && !isExpired(m.session.expiresAt, now) ? { kind: "adopt", session: m.session } : { kind: "none" };
    case "signed-out":
      return mine && mine.token === m.token ? { kind: "end", reason: m.reason || "You signed out in another tab." } : { kind: "none" };
  }
}
