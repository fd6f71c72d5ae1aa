import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeName, describeError, isUnauthenticated } from "./errors";

describe("describeError", () => {
  it("shows the service's own message for a client mistake", () => {
    expect(describeError(new ConnectError("name: required to create a cluster", Code.InvalidArgument))).toBe("name: required to create a cluster");
    expect(describeError(new ConnectError("cluster \"x\" not found", Code.NotFound))).toBe('cluster "x" not found');
  });
  it("falls back to the code in words when there is no message", () => {
    expect(describeError(new ConnectError("", Code.PermissionDenied))).toBe("Permission denied");
  });
  it("tells what to do when the service is away", () => {
    expect(describeError(new ConnectError("Failed to fetch", Code.Unavailable))).toMatch(/cannot be reached.*make up/);
    expect(describeError(new ConnectError("database unreachable", Code.Unavailable))).toBe("The service is unavailable: database unreachable. Try again shortly.");
  });
  it("words unexpected failures", () => {
    expect(describeError(new Error("boom"))).toBe("The service failed: boom");
    expect(describeError(new ConnectError("", Code.Internal))).toBe("The service failed unexpectedly.");
  });
  it("recognises a refused token", () => {
    expect(isUnauthenticated(new ConnectError("token revoked", Code.Unauthenticated))).toBe(true);
    expect(isUnauthenticated(new ConnectError("no", Code.PermissionDenied))).toBe(false);
    expect(isUnauthenticated(new Error("x"))).toBe(false);
  });
  it("names codes", () => {
    expect(codeName(Code.NotFound)).toBe("Not found");
    expect(codeName(Code.FailedPrecondition)).toBe("Failed precondition");
  });
});
