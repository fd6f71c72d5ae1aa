import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeName, describeError, explainError, isUnauthenticated } from "./errors";

describe("explainError", () => {
  it("shows the service's own sentence for a refusal of the request", () => {
    expect(explainError(new ConnectError("name: required to create a cluster", Code.InvalidArgument))).toEqual({ text: "Name: required to create a cluster.", details: "" });
    expect(describeError(new ConnectError("cluster \"x\" not found", Code.NotFound))).toBe('Cluster "x" not found.');
    expect(describeError(new ConnectError("k8s_version: v9.99.0 is not supported (offered: v1.33.13).", Code.InvalidArgument))).toBe("K8s version: v9.99.0 is not supported (offered: v1.33.13).");
  });
  it("says a field in words, not as the proto path the service named", () => {
    expect(describeError(new ConnectError("Backup.data_source.s3.path: must be bucket/key", Code.InvalidArgument))).toBe("S3 path: must be bucket/key.");
    expect(describeError(new ConnectError("CreateClusterRequest.node_pools[1].count: at least 1", Code.InvalidArgument))).toBe("Count: at least 1.");
    expect(describeError(new ConnectError("size_gb: must be at least 1", Code.InvalidArgument))).toBe("Size gb: must be at least 1.");
    expect(describeError(new ConnectError("volume \"a\" exists: nothing was created", Code.AlreadyExists))).toBe('Volume "a" exists: nothing was created.');
  });
  it("words a role's refusal without the RPC path, which stays under details", () => {
    const x = explainError(new ConnectError("role viewer may not call /hashicorp.vagrant.Vagrant/QueueJob (write)", Code.PermissionDenied));
    expect(x.text).toBe("Your role (viewer) can look but not change anything. Ask an admin for the operator role.");
    expect(x.text).not.toMatch(/\//);
    expect(x.details).toContain("/hashicorp.vagrant.Vagrant/QueueJob");
    expect(describeError(new ConnectError("role operator may not call /plinth.auth.v1.AdminService/CreateUser (admin)", Code.PermissionDenied)))
      .toBe("Your role (operator) cannot do this: it needs the admin role.");
    expect(describeError(new ConnectError("you need admin rights", Code.PermissionDenied))).toBe("You need admin rights.");
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
