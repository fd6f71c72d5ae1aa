import { describe, expect, it } from "vitest";
import { askOtherTabs, onTabMessage, parseTabMessage, type Channel, type TabMessage } from "./tabs";

const s = { token: "tok", expiresAt: 10_000, accountId: "a1", username: "admin", role: "admin" as const };

/** Two ends of one channel: what one posts, the other hears (as BroadcastChannel, never itself). */
function pair(): [Channel & { sent: TabMessage[] }, Channel & { sent: TabMessage[] }] {
  const make = () => {
    const fns = new Set<(e: { data: unknown }) => void>();
    return { fns, sent: [] as TabMessage[], other: null as null | { fns: Set<(e: { data: unknown }) => void> } };
  };
  const a = make();
  const b = make();
  const end = (me: ReturnType<typeof make>, them: ReturnType<typeof make>) => ({
    sent: me.sent,
    postMessage(m: TabMessage) {
      me.sent.push(m);
      for (const f of them.fns) queueMicrotask(() => f({ data: m }));
    },
    addEventListener(_: "message", f: (e: { data: unknown }) => void) { me.fns.add(f); },
    removeEventListener(_: "message", f: (e: { data: unknown }) => void) { me.fns.delete(f); },
  });
  return [end(a, b), end(b, a)];
}

describe("tabs", () => {
  it("a new tab gets the session of an open one", async () => {
    const [fresh, open] = pair();
    open.addEventListener("message", (e) => {
      const act = onTabMessage(parseTabMessage(e.data), s, 5_000);
      if (act.kind === "answer") open.postMessage({ type: "session", session: act.session });
    });
    expect(await askOtherTabs(fresh, () => 5_000, 1_000)).toEqual(s);
    expect(fresh.sent).toEqual([{ type: "ask" }]);
  });

  it("no open tab, or only an expired session: null after the wait", async () => {
    const [fresh, open] = pair();
    expect(await askOtherTabs(fresh, () => 0, 10)).toBeNull();
    open.addEventListener("message", () => open.postMessage({ type: "session", session: { ...s, expiresAt: 1 } }));
    expect(await askOtherTabs(fresh, () => 5, 10)).toBeNull();
  });

  it("answers asks only when signed in, adopts a sign-in only when signed out", () => {
    expect(onTabMessage({ type: "ask" }, s, 0)).toEqual({ kind: "answer", session: s });
    expect(onTabMessage({ type: "ask" }, null, 0)).toEqual({ kind: "none" });
    expect(onTabMessage({ type: "ask" }, s, 10_000)).toEqual({ kind: "none" }); // expired
    expect(onTabMessage({ type: "session", session: s }, null, 0)).toEqual({ kind: "adopt", session: s });
    expect(onTabMessage({ type: "session", session: { ...s, token: "other" } }, s, 0)).toEqual({ kind: "none" });
  });

  it("a sign-out elsewhere ends this tab's session only when it is the same one", () => {
    expect(onTabMessage({ type: "signed-out", reason: "You signed out.", token: "tok" }, s, 0)).toEqual({ kind: "end", reason: "You signed out." });
    expect(onTabMessage({ type: "signed-out", reason: "", token: "tok" }, s, 0)).toEqual({ kind: "end", reason: "You signed out in another tab." });
    expect(onTabMessage({ type: "signed-out", reason: "x", token: "another" }, s, 0)).toEqual({ kind: "none" });
    expect(onTabMessage({ type: "signed-out", reason: "x", token: "tok" }, null, 0)).toEqual({ kind: "none" });
  });

  it("refuses anything that is not a message of ours", () => {
    for (const bad of [null, 1, "ask", {}, { type: "session" }, { type: "session", session: { token: "" , expiresAt: 1 } },
      { type: "session", session: { token: "t" } }, { type: "signed-out", reason: "x" }, { type: "other" }]) {
      expect(parseTabMessage(bad)).toBeNull();
    }
    expect(parseTabMessage({ type: "session", session: { token: "t", expiresAt: 5, role: "root" } })).toEqual({
      type: "session", session: { token: "t", expiresAt: 5, accountId: "", username: "", role: "" },
    });
  });
});
