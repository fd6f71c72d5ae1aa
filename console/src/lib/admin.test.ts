import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ListUsersResponseSchema, UserSchema } from "../gen/plinth/auth/v1/admin_pb";
import { appendPage, confirmQuestion, isMe, isPermissionDenied, outcome, passwordProblem, roleQuestion, userRole, userState, usernameProblem } from "./admin";

const user = (id: string, username: string, disabled = false) => create(UserSchema, { id, username, disabled });

describe("admin view logic", () => {
  it("tells a refusal for lack of rights from other failures", () => {
    expect(isPermissionDenied(new ConnectError("admin rights required", Code.PermissionDenied))).toBe(true);
    expect(isPermissionDenied(new ConnectError("invalid token!", Code.Unauthenticated))).toBe(false);
    expect(isPermissionDenied(new Error("network"))).toBe(false);
  });
  it("checks usernames and passwords as auth does; an empty password is generated", () => {
    expect(usernameProblem("bob")).toBe("");
    expect(usernameProblem("bo")).toMatch(/3 to 24/);
    expect(usernameProblem("b o b")).toMatch(/letters, digits/);
    expect(passwordProblem("")).toBe("");
    expect(passwordProblem("secret1")).toBe("");
    expect(passwordProblem("12345")).toMatch(/at least 6/);
    expect(passwordProblem("é".repeat(36))).toMatch(/70 bytes/);
  });
  it("shows auth's role, or for an auth older than roles the admin flag", () => {
    expect(userRole(create(UserSchema, { username: "v", role: "viewer" }))).toBe("viewer");
    expect(userRole(create(UserSchema, { username: "a", role: "admin", admin: true }))).toBe("admin");
    expect(userRole(create(UserSchema, { username: "old", admin: true }))).toBe("admin");
    expect(userRole(create(UserSchema, { username: "old" }))).toBe("operator");
  });
  it("asks before a role change, saying it signs the user out", () => {
    expect(roleQuestion("bob", "viewer")).toBe("Make bob a viewer (reads only)? They are signed out everywhere and sign in again with the new role.");
    expect(roleQuestion("ann", "admin")).toMatch(/^Make ann an admin \(everything\)\?/);
  });
  it("accumulates pages in username order without duplicates", () => {
    const first = appendPage([], create(ListUsersResponseSchema, { users: [user("1", "admin"), user("2", "Bob")], nextPageToken: "Ym9i" }));
    const both = appendPage(first, create(ListUsersResponseSchema, { users: [user("2", "Bob", true), user("3", "carol")] }));
    expect(both.map((u) => u.username)).toEqual(["admin", "Bob", "carol"]);
    expect(both[1].disabled).toBe(true);
  });
  it("says what happened, with a generated password once", () => {
    expect(outcome("created", "bob", "")).toBe("Created bob.");
    expect(outcome("created", "bob", "s3cr3t-generated")).toMatch(/shown once, copy it now\):$/);
    expect(outcome("created", "bob", "s3cr3t-generated")).not.toContain("s3cr3t-generated");
    expect(outcome("reset", "bob", "")).toMatch(/tokens are revoked/);
    expect(userState(user("1", "a", true))).toEqual({ text: "Disabled", level: "err" });
    expect(userState(user("1", "a"))).toEqual({ text: "Enabled", level: "ok" });
    expect(confirmQuestion("disable", "bob")).toMatch(/Disable bob\?/);
    expect(confirmQuestion("enable", "bob")).toBe("");
    expect(isMe(user("1", "Admin"), "admin")).toBe(true);
    expect(isMe(user("2", "bob"), "admin")).toBe(false);
  });
});
