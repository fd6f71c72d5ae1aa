import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeName, describeError, explainError, isUnauthenticated } from "./errors";

describe("explainError", () => {
  it("shows the service's own sentence for a refusal of the request", () => {
    expect(explainError(new ConnectError("name: required to create a cluster", Code.InvalidArgument))).toEqual({ text: "Name: required to create a cluster.", details: "" });
    expect(describeError(new ConnectError("cluster \"x\" not found", Code.NotFound))).toBe('Cluster "x" not found.');
    expect(describeError(new ConnectError("k8s_version: v9.99.0 is not supported (offered: v1.33.13).", Code.InvalidArgument))).toBe("K8s_version: v9.99.0 is not supported (offered: v1.33.13).");
  });
  it("falls back to the code in words when there is no message", () => {
    expect(describeError(new ConnectError("", Code.PermissionDenied))).toBe("Permission denied.");
  });
  it("tells what to do when the service is away, the raw words apart", () => {
    expect(explainError(new ConnectError("Failed to fetch", Code.Unavailable))).toEqual({ text: expect.stringMatching(/cannot be reached.*make up/), details: "" });
    expect(explainError(new ConnectError("database unreachable", Code.Unavailable)).details).toBe("database unreachable");
    expect(explainError(new ConnectError("stream terminated by RST_STREAM with error code: CANCEL", Code.DeadlineExceeded)))
      .toEqual({ text: "The service took too long to answer. Try again.", details: "stream terminated by RST_STREAM with error code: CANCEL" });
  });
  it("words unexpected failures and keeps what the service said under details", () => {
    expect(explainError(new Error("boom"))).toEqual({ text: expect.stringMatching(/^The service failed unexpectedly\. Try again/), details: "boom" });
    expect(explainError(new ConnectError("", Code.Internal)).details).toBe("");
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
