import { describe, expect, it } from "vitest";
import { afterSignIn, notFound, objectPath, pageFor, routeFor, routePath, signInPath } from "./routes";
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
    expect(pageFor("/", true)).toBe("/overview");
    expect(pageFor("/signin", true)).toBe("/overview");
    expect(pageFor("/nope", true)).toBe(notFound);
    expect(pageFor("/storage/x", true)).toBe(notFound);
  });
  it("sends a user back, once signed in, to the path they asked for, even one that names no page", () => {
    expect(afterSignIn("/vagrant")).toBe("/vagrant");
    expect(afterSignIn("/")).toBe("/overview");
    expect(afterSignIn("/signin")).toBe("/overview");
    expect(afterSignIn("/nope")).toBe("/nope");
    expect(afterSignIn("/clusters/ux1/")).toBe("/clusters/ux1");
  });
});

describe("routeFor", () => {
  it("names a cluster by its own path, decoded, and keeps pages without objects flat", () => {
    expect(routeFor("/clusters/ux1", true)).toEqual({ page: "/clusters", id: "ux1", prefix: "/clusters" });
    expect(routeFor("/clusters/a%20b", true)).toEqual({ page: "/clusters", id: "a b", prefix: "/clusters" });
    expect(routeFor("/vagrant/jobs/01HJOB", true)).toEqual({ page: "/vagrant", id: "01HJOB", prefix: "/vagrant/jobs" });
    expect(routeFor("/vagrant/jobs", true).page).toBe(notFound);
    expect(routeFor("/vagrant/01HJOB", true).page).toBe(notFound);
    expect(routeFor("/constructor/x", true).page).toBe(notFound);
    expect(routeFor("/clusters", true)).toEqual({ page: "/clusters", id: "" });
    expect(routeFor("/clusters/ux1", false)).toEqual({ page: signInPath, id: "" });
    expect(routeFor("/clusters/a/b", true).page).toBe(notFound);
    expect(routeFor("/clusters/%E0%A4%A", true).page).toBe(notFound);
    expect(routeFor("/clusters/a%2Fb", true).page).toBe(notFound);
    expect(routeFor("/admin/x", true).page).toBe(notFound);
  });
  it("names a volume and a backup server by their own paths", () => {
    expect(routeFor("/volumes/pvc-1", true)).toEqual({ page: "/volumes", id: "pvc-1", prefix: "/volumes" });
    expect(routeFor("/backups/pg-main/", true)).toEqual({ page: "/backups", id: "pg-main", prefix: "/backups" });
    expect(routeFor("/volumes/a/b", true).page).toBe(notFound);
    expect(routePath(routeFor("/backups/pg%2Dmain", true))).toBe("/backups/pg-main");
  });
  it("spells each route one way", () => {
    expect(routePath({ page: "/clusters", id: "a b", prefix: "/clusters" })).toBe("/clusters/a%20b");
    expect(routePath(routeFor("/vagrant/jobs/j1/", true))).toBe("/vagrant/jobs/j1");
    expect(routePath(routeFor("/clusters/ux1/", true))).toBe("/clusters/ux1");
    expect(objectPath("/clusters", "ux1")).toBe("/clusters/ux1");
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
