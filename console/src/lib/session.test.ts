import { describe, expect, it } from "vitest";
import { endSession, isExpired, refusedMessage, loadSession, msUntilExpiry, saveSession, signOutReason, type KeyValueStore } from "./session";

function memory(): KeyValueStore & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return {
    data,
    getItem: (k) => data.get(k) ?? null,
    setItem: (k, v) => void data.set(k, v),
    removeItem: (k) => void data.delete(k),
  };
}

const s = { token: "tok", expiresAt: 10_000, accountId: "a1", username: "admin", role: "viewer" as const };

describe("session", () => {
  it("round-trips a live session", () => {
    const st = memory();
    saveSession(st, s);
    expect(loadSession(st, 9_999)).toEqual(s);
  });

  it("reads a session saved before roles, or with a role it does not know, as role unknown", () => {
    for (const role of [undefined, "root"]) {
      const st = memory();
      st.setItem("plinth.session", JSON.stringify({ ...s, role }));
      expect(loadSession(st, 0)?.role).toBe("");
    }
  });

  it("drops an expired session and says why", () => {
    const st = memory();
    saveSession(st, s);
    expect(loadSession(st, 10_000)).toBeNull();
    expect(st.data.has("plinth.session")).toBe(false);
    expect(signOutReason(st)).toMatch(/expired/);
  });

  it("drops malformed data without a message", () => {
    for (const raw of ["{", "null", '{"token":""}', '{"token":"x"}', '{"token":1,"expiresAt":0}']) {
      const st = memory();
      st.setItem("plinth.session", raw);
      expect(loadSession(st, 0)).toBeNull();
      expect(st.data.has("plinth.session")).toBe(false);
      expect(signOutReason(st)).toBe("");
    }
  });

  it("keeps a session whose expiry is unknown", () => {
    const st = memory();
    saveSession(st, { ...s, expiresAt: 0 });
    expect(loadSession(st, Number.MAX_SAFE_INTEGER)?.token).toBe("tok");
    expect(isExpired(0, 1e15)).toBe(false);
    expect(msUntilExpiry({ ...s, expiresAt: 0 }, 5)).toBeNull();
    expect(msUntilExpiry(s, 4_000)).toBe(6_000);
    expect(msUntilExpiry(s, 20_000)).toBe(0);
  });

  it("ending a session forgets the token and keeps the reason until the next sign-in", () => {
    const st = memory();
    saveSession(st, s);
    endSession(st, "You signed out.");
    expect(loadSession(st, 0)).toBeNull();
    expect([...st.data.keys()]).toEqual(["plinth.signout-reason"]);
    expect(signOutReason(st)).toBe("You signed out.");
    saveSession(st, s);
    expect(signOutReason(st)).toBe("");
  });

  it("never writes the token anywhere but the given store", () => {
    const st = memory();
    saveSession(st, s);
    expect([...st.data.keys()]).toEqual(["plinth.session"]);
    expect(typeof document === "undefined" || !document.cookie.includes("tok")).toBe(true);
  });
});

describe("refusedMessage", () => {
  it("quotes the service once, without doubled punctuation", () => {
    expect(refusedMessage("invalid token! Please login again.")).toBe("You were signed out: invalid token! Please login again.");
    expect(refusedMessage("token revoked")).toBe("You were signed out: token revoked.");
    expect(refusedMessage("  ")).toMatch(/no longer accepted/);
  });
});
