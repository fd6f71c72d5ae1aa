import { describe, expect, it } from "vitest";
import { ClusterStatus } from "../gen/cnct/kaas/api/api_pb";
import { clusterStatus, createProblem, createRequest, nameProblem, scaleProblem, scaleRequest, type CreateForm } from "./kaas";

const ok: CreateForm = { name: "dev", version: "", controlPlane: 1, poolName: "workers", poolCount: 2 };

describe("kaas view logic", () => {
  it("words statuses", () => {
    expect(clusterStatus(ClusterStatus.RUNNING)).toEqual({ level: "ok", text: "Running" });
    expect(clusterStatus(ClusterStatus.STOPPING).text).toBe("Deleting");
    expect(clusterStatus(ClusterStatus.ERROR).level).toBe("err");
    expect(clusterStatus(ClusterStatus.STATUS_UNSPECIFIED).level).toBe("unknown");
  });
  it("checks names as DNS-1123 labels", () => {
    expect(nameProblem("cluster name", "dev-1")).toBe("");
    expect(nameProblem("cluster name", "")).toMatch(/required/);
    expect(nameProblem("cluster name", "Dev")).toMatch(/lower-case/);
    expect(nameProblem("cluster name", "-dev")).toMatch(/starting and ending/);
    expect(nameProblem("cluster name", "a".repeat(64))).toMatch(/63/);
  });
  it("checks the create form as kaas does", () => {
    expect(createProblem(ok)).toBe("");
    expect(createProblem({ ...ok, version: "v1.33.1" })).toBe("");
    expect(createProblem({ ...ok, version: "1.33" })).toMatch(/vMAJOR/);
    expect(createProblem({ ...ok, controlPlane: 2 })).toMatch(/1, 3 or 5/);
    expect(createProblem({ ...ok, poolName: "control-plane" })).toMatch(/reserved/);
    expect(createProblem({ ...ok, poolCount: -1 })).toMatch(/0 or more/);
    expect(createProblem({ ...ok, poolName: "", poolCount: 0 })).toBe("");
  });
  it("builds the requests", () => {
    const r = createRequest(ok);
    expect(r.name).toBe("dev");
    expect(r.controlPlaneNodes?.count).toBe(1);
    expect(r.workerNodePools.map((p) => [p.name, p.count])).toEqual([["workers", 2]]);
    expect(createRequest({ ...ok, poolName: "" }).workerNodePools).toEqual([]);
    const s = scaleRequest("dev", "workers", 3);
    expect(s.clusterName).toBe("dev");
    expect(s.nodePools.map((p) => [p.name, p.count])).toEqual([["workers", 3]]);
    expect(scaleProblem("workers", 0)).toBe("");
    expect(scaleProblem("workers", 1.5)).toMatch(/0 or more/);
  });
});
