// View logic of the Clusters page: statuses, and the create/scale forms checked by the rules
// kaas applies (services/kaas/internal/cluster/rules.go), so a typo is caught before the
// round trip; kaas still decides (instance types, pool sizes and versions are its config).
import { create } from "@bufbuild/protobuf";
import { ClusterStatus, CreateClusterMsgSchema, ScaleNodePoolMsgSchema, type CreateClusterMsg, type GetClusterNodesStatusReply_MachineStatus, type ScaleNodePoolMsg } from "../gen/cnct/kaas/api/api_pb";
import type { ClusterInfo, GetCatalogResponse, Machine } from "../gen/plinth/kaas/v1/clusters_pb";
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
  /** The worker pool's instance type; "" for kaas's default (the catalog's first). */
  instanceType?: string;
}

/** The problem with a pool size given kaas's largest pool (0: not known yet). */
function poolSizeProblem(count: number, max: number): string {
  if (!Number.isInteger(count) || count < 0) return "A pool has 0 or more machines.";
  if (max > 0 && count > max) return `A pool has at most ${max} machines here.`;
  return "";
}

/** The problem with the create form, field by field ("" when kaas may be asked). */
export function createProblem(f: CreateForm, catalog?: GetCatalogResponse): string {
  const n = nameProblem("cluster name", f.name);
  if (n) return n;
  if (f.version && !/^v?\d+\.\d+\.\d+$/.test(f.version)) return "The Kubernetes version reads vMAJOR.MINOR.PATCH, e.g. v1.33.1 (or leave it empty for the default).";
  if (!controlPlaneSizes.includes(f.controlPlane)) return "A control plane has 1, 3 or 5 machines.";
  if (f.poolName || f.poolCount > 0) {
    const p = nameProblem("worker pool name", f.poolName);
    if (p) return p;
    if (f.poolName === controlPlanePool) return `"${controlPlanePool}" is reserved for the control plane.`;
    const n = poolSizeProblem(f.poolCount, catalog?.maxPoolSize ?? 0);
    if (n) return n.replace("A pool", "A worker pool");
  }
  if (catalog && f.version && !catalog.versions.includes(f.version)) return `Kubernetes ${f.version} is not offered here; choose one of ${catalog.versions.join(", ")}.`;
  return "";
}

/** The CreateCluster request of a valid form. */
export function createRequest(f: CreateForm): CreateClusterMsg {
  return create(CreateClusterMsgSchema, {
    name: f.name,
    k8sVersion: f.version,
    controlPlaneNodes: { count: f.controlPlane },
    workerNodePools: f.poolName ? [{ name: f.poolName, count: f.poolCount, instanceType: f.instanceType ?? "" }] : [],
  });
}

/** The problem with a scale request ("" when kaas may be asked). */
export function scaleProblem(pool: string, count: number, maxPoolSize = 0): string {
  if (!pool) return "Choose the pool to scale.";
  const p = nameProblem("pool name", pool);
  if (p) return p;
  return poolSizeProblem(count, maxPoolSize);
}

/**
 * The question asked before scaling a pool to zero machines ("" for any other count: no
 * question). Every worker of the pool is released and what runs on it stops.
 */
export function scaleToZeroQuestion(cluster: string, pool: string, count: number): string {
  if (count !== 0) return "";
  return `Scale pool ${pool} of ${cluster} to 0 machines? Every worker machine of the pool is released, and the pods running on them stop until the pool grows again.`;
}

/**
 * What a cluster of zero workers means, shown beside the form while 0 is chosen: it is allowed
 * (a control plane alone), and people should know what they get.
 */
export const zeroWorkersNote =
  "0 workers: the cluster runs its control plane only. Pods that do not tolerate the control plane's taint stay Pending until you scale the pool up on the cluster's page.";

/** The ScaleNodePool request for one pool. */
export function scaleRequest(cluster: string, pool: string, count: number): ScaleNodePoolMsg {
  return create(ScaleNodePoolMsgSchema, { clusterName: cluster, nodePools: [{ name: pool, count }] });
}

/** A cluster's state in two parts: one short sentence, and the whole story for "Details". */
export interface Summary {
  text: string;
  /** kaas's whole status message when it says more than text; "" when not. */
  details: string;
  /** What to do about a failure; "" when nothing is wrong. */
  nextStep: string;
}

/**
 * What the console says of a cluster: kaas's cause (a failure or retries, one sentence and a
 * next step) when it has one; else the first clause of the status message ("2 of 3 machines
 * ready"), the rest ("; waiting for …") under Details.
 */
export function clusterSummary(statusMessage: string, cause?: { summary: string; nextStep: string }): Summary {
  const msg = statusMessage.trim();
  if (cause?.summary) return { text: cause.summary, nextStep: cause.nextStep, details: msg };
  const cut = msg.indexOf("; ");
  const first = cut < 0 ? msg : msg.slice(0, cut);
  const text = first ? first.charAt(0).toUpperCase() + first.slice(1) + "." : "No status yet.";
  return { text, nextStep: "", details: cut < 0 ? "" : msg };
}

/** Which actions a cluster's state allows now, each with the reason when not. */
export interface Allowed {
  scale: string;
  upgrade: string;
  delete: string;
}

/**
 * The actions kaas would accept now ("" = allowed, else why not): nothing but reading while it
 * is being deleted; upgrades only once it runs (kaas refuses one while it is being created,
 * during another change, or with a failed machine).
 */
export function allowedActions(info: Pick<ClusterInfo, "status" | "deleting">): Allowed {
  if (info.deleting || info.status === ClusterStatus.STOPPING) {
    const why = "The cluster is being deleted.";
    return { scale: why, upgrade: why, delete: why };
  }
  let upgrade = "";
  if (info.status === ClusterStatus.PROVISIONING) upgrade = "The cluster is still being created.";
  else if (info.status === ClusterStatus.RECONCILING) upgrade = "Another change is under way; upgrade once it ends.";
  else if (info.status !== ClusterStatus.RUNNING) upgrade = "A machine failed; deal with it first (see the cause above).";
  return { scale: "", upgrade, delete: "" };
}

/** A machine as kaas knows it joined with its node as the cluster's API server sees it now. */
export interface MachineRow {
  machine: Machine;
  /** The node's readiness ("Ready"), or a sentence when it cannot be known. */
  node: string;
  /** The kubelet's version, or "" when not known. */
  kubelet: string;
}

/** What "unknown" from GetClusterNodesStatus means, in words. */
export const nodeUnknown = "Unknown: the cluster's API server did not answer";

/** Joins kaas's machines with the live node status (matched by hostname or name). */
export function machineRows(machines: Machine[], live: GetClusterNodesStatusReply_MachineStatus[] | undefined): MachineRow[] {
  return machines.map((m) => {
    const n = live?.find((l) => l.maasHostname !== "" && (l.maasHostname === m.hostname || l.maasHostname === m.name));
    let node = "";
    if (!n) node = live ? "Not reported" : "Not asked (the live status did not answer)";
    else if (n.k8sNodeStatus === "unknown") node = nodeUnknown;
    else if (n.k8sNodeStatus === "not registered") node = "Not registered with the API server yet";
    else node = n.k8sNodeStatus || "—";
    const kubelet = n && n.k8sVersion !== "unknown" ? n.k8sVersion : "";
    return { machine: m, node, kubelet };
  });
}

/** The worker pools that can be scaled (not the control plane, not being deleted). */
export function scalablePools(info: Pick<ClusterInfo, "pools">): string[] {
  return info.pools.filter((p) => p.name !== controlPlanePool && !p.deleting).map((p) => p.name);
}
