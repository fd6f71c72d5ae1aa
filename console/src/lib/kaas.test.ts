import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ClusterStatus, GetClusterNodesStatusReply_MachineStatusSchema } from "../gen/cnct/kaas/api/api_pb";
import { GetCatalogResponseSchema, MachineSchema, PoolSchema } from "../gen/plinth/kaas/v1/clusters_pb";
import { allowedActions, clusterStatus, clusterSummary, createProblem, createRequest, machineRows, nameProblem, nodeUnknown, scalablePools, scaleProblem, scaleRequest, scaleToZeroQuestion, type CreateForm } from "./kaas";

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

describe("cluster page logic", () => {
  const catalog = create(GetCatalogResponseSchema, { versions: ["v1.32.13", "v1.33.13"], defaultVersion: "v1.33.13", instanceTypes: ["standard", "gpu"], maxPoolSize: 5, controlPlaneSizes: [1, 3, 5] });
  it("checks the create form against the server's catalog", () => {
    expect(createProblem({ ...ok, version: "v1.33.13" }, catalog)).toBe("");
    expect(createProblem({ ...ok, version: "v9.99.0" }, catalog)).toBe("Kubernetes v9.99.0 is not offered here; choose one of v1.32.13, v1.33.13.");
    expect(createProblem({ ...ok, poolCount: 6 }, catalog)).toBe("A worker pool has at most 5 machines here.");
    expect(createRequest({ ...ok, instanceType: "gpu" }).workerNodePools[0].instanceType).toBe("gpu");
    expect(scaleProblem("", 1)).toBe("Choose the pool to scale.");
    expect(scaleProblem("w", 9, 5)).toBe("A pool has at most 5 machines here.");
  });
  it("says a failure in one sentence with its next step, the raw words under Details", () => {
    const raw = "control-plane machine ux1-control-plane-1 failed: vagrant job 01H: exit status 1: F1126 22:16:48.384390 29392 instance.go:226] Error creating leases";
    expect(clusterSummary(raw, { summary: "Control-plane machine ux1-control-plane-1 failed at the vagrant provider.", nextStep: "Delete the cluster and create it again." }))
      .toEqual({ text: "Control-plane machine ux1-control-plane-1 failed at the vagrant provider.", nextStep: "Delete the cluster and create it again.", details: raw });
    expect(clusterSummary("2 of 3 machines ready; waiting for c-w-2 (provisioning, provider: Deploying)"))
      .toEqual({ text: "2 of 3 machines ready.", nextStep: "", details: "2 of 3 machines ready; waiting for c-w-2 (provisioning, provider: Deploying)" });
    expect(clusterSummary("all 3 machines ready, Kubernetes v1.33.13")).toEqual({ text: "All 3 machines ready, Kubernetes v1.33.13.", nextStep: "", details: "" });
    expect(clusterSummary("").text).toBe("No status yet.");
  });
  it("enables only the actions the state allows", () => {
    expect(allowedActions({ status: ClusterStatus.RUNNING, deleting: false })).toEqual({ scale: "", upgrade: "", delete: "" });
    expect(allowedActions({ status: ClusterStatus.STOPPING, deleting: true }).delete).toMatch(/being deleted/);
    expect(allowedActions({ status: ClusterStatus.PROVISIONING, deleting: false }).upgrade).toMatch(/still being created/);
    expect(allowedActions({ status: ClusterStatus.DEGRADED, deleting: false })).toMatchObject({ scale: "", delete: "" });
    expect(allowedActions({ status: ClusterStatus.DEGRADED, deleting: false }).upgrade).toMatch(/failed/);
  });
  it("joins machines with their live node status and explains unknown", () => {
    const m = (name: string) => create(MachineSchema, { name, hostname: name });
    const live = [
      create(GetClusterNodesStatusReply_MachineStatusSchema, { maasHostname: "a", k8sNodeStatus: "Ready", k8sVersion: "v1.33.13" }),
      create(GetClusterNodesStatusReply_MachineStatusSchema, { maasHostname: "b", k8sNodeStatus: "unknown", k8sVersion: "unknown" }),
    ];
    const rows = machineRows([m("a"), m("b"), m("c")], live);
    expect(rows.map((r) => [r.node, r.kubelet])).toEqual([["Ready", "v1.33.13"], [nodeUnknown, ""], ["Not reported", ""]]);
    expect(machineRows([m("a")], undefined)[0].node).toMatch(/did not answer/);
  });
  it("offers only worker pools that are not being deleted for scaling", () => {
    expect(scalablePools({ pools: [create(PoolSchema, { name: "control-plane" }), create(PoolSchema, { name: "w" }), create(PoolSchema, { name: "old", deleting: true })] })).toEqual(["w"]);
  });
});

describe("scaleToZeroQuestion", () => {
  it("asks only before scaling to zero, naming the pool and the cluster", () => {
    expect(scaleToZeroQuestion("prod", "workers", 0)).toMatch(/^Scale pool workers of prod to 0 machines\? .*released/);
    expect(scaleToZeroQuestion("prod", "workers", 1)).toBe("");
    expect(scaleToZeroQuestion("prod", "workers", 5)).toBe("");
  });
});
