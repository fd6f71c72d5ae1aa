// View logic of the Clusters page: statuses, and the create/scale forms checked by the rules
// kaas applies (services/kaas/internal/cluster/rules.go), so a typo is caught before the
// round trip; kaas still decides (instance types, pool sizes and versions are its config).
import { create } from "@bufbuild/protobuf";
import { ClusterStatus, CreateClusterMsgSchema, ScaleNodePoolMsgSchema, type CreateClusterMsg, type ScaleNodePoolMsg } from "../gen/cnct/kaas/api/api_pb";
import type { Level } from "./stats";

/** A cluster's status as a level and words. */
export function clusterStatus(s: ClusterStatus): { level: Level; text: string } {
  switch (s) {
    case ClusterStatus.PROVISIONING:
      return { level: "warn", text: "Provisioning" };
    case ClusterStatus.RUNNING:
      return { level: "ok", text: "Running" };
    case ClusterStatus.RECONCILING:
      return { level: "warn", text: "Reconciling" };
    case ClusterStatus.STOPPING:
      return { level: "warn", text: "Deleting" };
    case ClusterStatus.ERROR:
      return { level: "err", text: "Error" };
    case ClusterStatus.DEGRADED:
      return { level: "err", text: "Degraded" };
    default:
      return { level: "unknown", text: "Unknown" };
  }
}

/** The control-plane sizes kaas accepts (etcd's quorum stays odd). */
export const controlPlaneSizes = [1, 3, 5];

/** The pool name kaas reserves for the control plane. */
export const controlPlanePool = "control-plane";

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The problem with a cluster or pool name ("" when it is a DNS-1123 label). */
export function nameProblem(what: string, name: string): string {
  if (!name) return `The ${what} is required.`;
  if (name.length > 63) return `The ${what} has at most 63 characters.`;
  if (!dnsLabel.test(name)) return `The ${what} may hold lower-case letters, digits and '-', starting and ending with a letter or digit.`;
  return "";
}

/** The create form as the user filled it. */
export interface CreateForm {
  name: string;
  version: string;
  controlPlane: number;
  poolName: string;
  poolCount: number;
}

/** The problem with the create form, field by field ("" when kaas may be asked). */
export function createProblem(f: CreateForm): string {
  const n = nameProblem("cluster name", f.name);
  if (n) return n;
  if (f.version && !/^v?\d+\.\d+\.\d+$/.test(f.version)) return "The Kubernetes version reads vMAJOR.MINOR.PATCH, e.g. v1.33.1 (or leave it empty for the default).";
  if (!controlPlaneSizes.includes(f.controlPlane)) return "A control plane has 1, 3 or 5 machines.";
  if (f.poolName || f.poolCount > 0) {
    const p = nameProblem("worker pool name", f.poolName);
    if (p) return p;
    if (f.poolName === controlPlanePool) return `"${controlPlanePool}" is reserved for the control plane.`;
    if (!Number.isInteger(f.poolCount) || f.poolCount < 0) return "A worker pool has 0 or more machines.";
  }
  return "";
}

/** The CreateCluster request of a valid form. */
export function createRequest(f: CreateForm): CreateClusterMsg {
  return create(CreateClusterMsgSchema, {
    name: f.name,
    k8sVersion: f.version,
    controlPlaneNodes: { count: f.controlPlane },
    workerNodePools: f.poolName ? [{ name: f.poolName, count: f.poolCount }] : [],
  });
}

/** The problem with a scale request ("" when kaas may be asked). */
export function scaleProblem(pool: string, count: number): string {
  const p = nameProblem("pool name", pool);
  if (p) return p;
  if (!Number.isInteger(count) || count < 0) return "A pool has 0 or more machines.";
  return "";
}

/** The ScaleNodePool request for one pool. */
export function scaleRequest(cluster: string, pool: string, count: number): ScaleNodePoolMsg {
  return create(ScaleNodePoolMsgSchema, { clusterName: cluster, nodePools: [{ name: pool, count }] });
}
