import { describe, expect, it } from "vitest";
import { parseSignInFragment, startPath } from "./oidc";

describe("parseSignInFragment", () => {
  it("reads the session the gateway's callback sends", () => {
    const hash = "#" + new URLSearchParams({
      token: "tok/+=", expires_at: "1767225600000", account_id: "acc-1", username: "dev", role: "admin", provider: "dev",
    }).toString();
    expect(parseSignInFragment(hash)).toEqual({
      kind: "session",
      provider: "dev",
      session: { token: "tok/+=", expiresAt: 1767225600000, accountId: "acc-1", username: "dev", role: "admin" },
    });
  });

  it("takes the fragment with or without its #, and an unknown role as unknown", () => {
    const got = parseSignInFragment("token=t&expires_at=5&role=root");
    expect(got?.kind).toBe("session");
    if (got?.kind === "session") expect(got.session).toEqual({ token: "t", expiresAt: 5, accountId: "", username: "", role: "" });
  });

  it("says auth's message for a refusal", () => {
    const hash = "#" + new URLSearchParams({ error: "provider_failed", message: "sign-in with dev refused: no claim value maps to a role" }).toString();
    expect(parseSignInFragment(hash)).toEqual({ kind: "refused", message: "Sign-in refused: sign-in with dev refused: no claim value maps to a role." });
  });

  it("says the reason in words when there is no message", () => {
    expect(parseSignInFragment("#error=invalid_state")).toEqual({
      kind: "refused", message: "Sign-in refused: this sign-in was not begun in this browser, or was already completed.",
    });
    expect(parseSignInFragment("#error=weird")).toEqual({ kind: "refused", message: "Sign-in refused: the sign-in failed (weird)." });
    expect(parseSignInFragment("#error=")).toEqual({ kind: "refused", message: "Sign-in refused: the sign-in failed (no reason given)." });
  });

  it("refuses a token without a usable expiry instead of keeping half a session", () => {
    for (const hash of ["#token=t", "#token=t&expires_at=soon", "#token=t&expires_at=-1", "#token=&expires_at=5"]) {
      expect(parseSignInFragment(hash)?.kind, hash).toBe("refused");
    }
  });

  it("ignores fragments that are not the gateway's", () => {
    for (const hash of ["", "#", "#main", "#section=2"]) expect(parseSignInFragment(hash), hash).toBeNull();
  });

  it("bounds what it keeps of a field", () => {
    const got = parseSignInFragment(`#error=x&message=${"a".repeat(10_000)}`);
    expect(got?.kind === "refused" && got.message.length).toBeLessThan(4200);
  });
});

describe("startPath", () => {
  it("is the gateway's start route, the name escaped", () => {
    expect(startPath("dev")).toBe("/auth/oidc/dev/start");
    expect(startPath("a/b")).toBe("/auth/oidc/a%2Fb/start");
  });
});
