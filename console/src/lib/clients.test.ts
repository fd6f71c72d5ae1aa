import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { makeClients, vagrantProtocol } from "./clients";

interface Seen {
  url: string;
  headers: Headers;
}

// A fetch that records each request and answers with a Connect error (JSON, as Connect
// sends errors whatever the message format) or an empty binary message.
function fakeFetch(answer: { status: number; code?: string; message?: string }) {
  const seen: Seen[] = [];
  const f = async (input: RequestInfo | URL, init?: RequestInit) => {
    seen.push({ url: String(input), headers: new Headers(init?.headers) });
    if (answer.status === 200) {
      return new Response(new Uint8Array(), { status: 200, headers: { "content-type": "application/proto" } });
    }
    return new Response(JSON.stringify({ code: answer.code, message: answer.message }), {
      status: answer.status,
      headers: { "content-type": "application/json" },
    });
  };
  return { seen, fetch: f as typeof globalThis.fetch };
}

describe("makeClients", () => {
  it("sends the Plinth token as a bearer token to the gateway's Connect paths", async () => {
    const f = fakeFetch({ status: 200 });
    const c = makeClients("tok", "", () => {}, f.fetch);
    await c.stats.getClusterStats({});
    expect(f.seen[0].url).toMatch(/\/stats\.StatsService\/GetClusterStats$/);
    expect(f.seen[0].headers.get("authorization")).toBe("Bearer tok");
    expect(f.seen[0].headers.get("content-type")).toBe("application/proto");
    expect(c.vagrant).toBeNull();
    await c.history.getCapacityHistory({ maxPoints: 300 });
    expect(f.seen[1].url).toMatch(/\/plinth\.stats\.v1\.HistoryService\/GetCapacityHistory$/);
    expect(f.seen[1].headers.get("authorization")).toBe("Bearer tok");
  });

  it("lists vagrant-server's runners with the Plinth token, not the vagrant one", async () => {
    const f = fakeFetch({ status: 200 });
    const c = makeClients("tok", "wp24vagrant", () => {}, f.fetch);
    await c.runners.listRunners({});
    expect(f.seen[0].url).toMatch(/\/plinth\.vagrant\.v1\.RunnerService\/ListRunners$/);
    expect(f.seen[0].headers.get("authorization")).toBe("Bearer tok");
    expect(f.seen[0].headers.get("client-api-protocol")).toBeNull();
  });

  it("ends the session when a Plinth service refuses the token", async () => {
    const f = fakeFetch({ status: 401, code: "unauthenticated", message: "token revoked" });
    const ended: string[] = [];
    const c = makeClients("tok", "", (m) => ended.push(m), f.fetch);
    await expect(c.kaas.getClusterList({})).rejects.toSatisfy((e: unknown) => ConnectError.from(e).code === Code.Unauthenticated);
    expect(ended).toEqual(["token revoked"]);
  });

  it("does not end a session for other failures, nor before sign-in", async () => {
    const ended: string[] = [];
    const denied = makeClients("tok", "", (m) => ended.push(m), fakeFetch({ status: 403, code: "permission_denied", message: "no" }).fetch);
    await expect(denied.vg.getLVList({})).rejects.toBeInstanceOf(ConnectError);
    const anon = makeClients("", "", (m) => ended.push(m), fakeFetch({ status: 401, code: "unauthenticated", message: "wrong username or password" }).fetch);
    await expect(anon.auth.login({ username: "admin", password: "x" })).rejects.toBeInstanceOf(ConnectError);
    expect(ended).toEqual([]);
  });

  it("calls vagrant-server with the session's Vagrant token and protocol header; a refusal asks for a new token, not the end of the session", async () => {
    const f = fakeFetch({ status: 401, code: "unauthenticated", message: "invalid authentication token" });
    const ended: string[] = [];
    let refused = 0;
    const c = makeClients("tok", "wp24vagrant", (m) => ended.push(m), f.fetch, () => refused++);
    await expect(c.vagrant!._ListJobs({})).rejects.toBeInstanceOf(ConnectError);
    expect(f.seen[0].url).toMatch(/\/hashicorp\.vagrant\.Vagrant\/_ListJobs$/);
    expect(f.seen[0].headers.get("authorization")).toBe("wp24vagrant");
    expect(f.seen[0].headers.get("client-api-protocol")).toBe(vagrantProtocol);
    expect(ended).toEqual([]);
    expect(refused).toBe(1);
    // Any other refusal (a viewer's write) keeps the token.
    const denied = makeClients("tok", "wp24vagrant", () => {}, fakeFetch({ status: 403, code: "permission_denied", message: "no" }).fetch, () => refused++);
    await expect(denied.vagrant!.queueJob({})).rejects.toBeInstanceOf(ConnectError);
    expect(refused).toBe(1);
  });

  it("asks vagrant-server for a session token with the Plinth token; a refusal there ends the session", async () => {
    const f = fakeFetch({ status: 401, code: "unauthenticated", message: "your Plinth session has ended; sign in again" });
    const ended: string[] = [];
    const c = makeClients("tok", "", (m) => ended.push(m), f.fetch);
    await expect(c.sessionTokens.issueSessionToken({})).rejects.toBeInstanceOf(ConnectError);
    expect(f.seen[0].url).toMatch(/\/plinth\.vagrant\.v1\.SessionTokenService\/IssueSessionToken$/);
    expect(f.seen[0].headers.get("authorization")).toBe("Bearer tok");
    expect(ended).toEqual(["your Plinth session has ended; sign in again"]);
  });
});
