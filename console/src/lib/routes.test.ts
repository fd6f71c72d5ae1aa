import { describe, expect, it } from "vitest";
import { afterSignIn, notFound, pageFor, signInPath } from "./routes";
import { validateLogin } from "./auth";

describe("pageFor", () => {
  it("sends a signed-out user to sign-in whatever the path", () => {
    expect(pageFor("/vagrant", false)).toBe(signInPath);
  });
  it("resolves known pages, trailing slashes and unknown paths", () => {
    expect(pageFor("/vagrant", true)).toBe("/vagrant");
    expect(pageFor("/admin", true)).toBe("/admin");
    expect(pageFor("/clusters/", true)).toBe("/clusters");
    expect(pageFor("/backups", true)).toBe("/backups");
    expect(pageFor("/activity", true)).toBe("/activity");
    expect(pageFor("/", true)).toBe("/storage");
    expect(pageFor("/signin", true)).toBe("/storage");
    expect(pageFor("/nope", true)).toBe(notFound);
    expect(pageFor("/storage/x", true)).toBe(notFound);
  });
  it("sends a user back, once signed in, to the path they asked for, even one that names no page", () => {
    expect(afterSignIn("/vagrant")).toBe("/vagrant");
    expect(afterSignIn("/")).toBe("/storage");
    expect(afterSignIn("/signin")).toBe("/storage");
    expect(afterSignIn("/nope")).toBe("/nope");
  });
});

describe("validateLogin", () => {
  it("applies auth's rules", () => {
    expect(validateLogin("admin", "secret1")).toBe("");
    expect(validateLogin("ad", "secret1")).toMatch(/3 to 24/);
    expect(validateLogin("a".repeat(25), "secret1")).toMatch(/3 to 24/);
    expect(validateLogin("ad min", "secret1")).toMatch(/letters, digits/);
    expect(validateLogin("admin", "12345")).toMatch(/at least 6/);
    expect(validateLogin("admin", "é".repeat(36))).toMatch(/70 bytes/);
  });
});
