import { describe, expect, it } from "vitest";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AuthService } from "../gen/services/auth/auth_pb";
import { canAdminister, canWrite, fetchRole, parseRole } from "./roles";

describe("roles", () => {
  it("parses auth's role names and nothing else", () => {
    expect(parseRole("viewer")).toBe("viewer");
    expect(parseRole(" Operator ")).toBe("operator");
    expect(parseRole("admin")).toBe("admin");
    expect(parseRole("root")).toBe("");
    expect(parseRole(null)).toBe("");
  });
  it("offers writes to every role but viewer, user administration to admins (and when unknown)", () => {
    expect(canWrite("viewer")).toBe(false);
    expect(canWrite("operator")).toBe(true);
    expect(canWrite("admin")).toBe(true);
    expect(canWrite("")).toBe(true);
    expect(canAdminister("operator")).toBe(false);
    expect(canAdminister("viewer")).toBe(false);
    expect(canAdminister("admin")).toBe(true);
  });
  it("reads the role from CheckToken's response header, only for a live token", async () => {
    const transport = (role: string, success: boolean) => createRouterTransport(({ service }) => {
      service(AuthService, {
        login: () => { throw new Error("unused"); },
        logout: () => { throw new Error("unused"); },
        checkToken: (req, ctx) => {
          expect(req.token).toBe("tok");
          ctx.responseHeader.set("plinth-account-role", role);
          return { success };
        },
      });
    });
    expect(await fetchRole(createClient(AuthService, transport("viewer", true)), "tok")).toBe("viewer");
    expect(await fetchRole(createClient(AuthService, transport("operator", true)), "tok")).toBe("operator");
    expect(await fetchRole(createClient(AuthService, transport("viewer", false)), "tok")).toBe("");
    expect(await fetchRole(createClient(AuthService, transport("superuser", true)), "tok")).toBe("");
  });
});
