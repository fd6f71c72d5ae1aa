// View logic of the Storage page's detail (stats' plinth.stats.v1.ClusterService): why the
// health is what it is, which cluster it is, the crashes, pools and OSDs in words.
import { ClusterSource, type Crash, type GetClusterDetailResponse, type HealthCheck, type Pool } from "../gen/plinth/stats/v1/cluster_pb";
import { ago, formatBytes, timestampMs } from "./format";
import type { Level } from "./stats";

/** A check's severity as a level and a word. */
export function severity(s: string): { level: Level; text: string } {
  switch (s.toUpperCase()) {
    case "HEALTH_ERR":
      return { level: "err", text: "Error" };
    case "HEALTH_WARN":
      return { level: "warn", text: "Warning" };
    default:
      return { level: "unknown", text: s || "Unknown" };
  }
}

/** The checks worst first (errors, then warnings; unmuted before muted), by code within each. */
export function orderChecks(checks: HealthCheck[]): HealthCheck[] {
  const rank = (c: HealthCheck) => (c.severity === "HEALTH_ERR" ? 0 : c.severity === "HEALTH_WARN" ? 1 : 2) + (c.muted ? 3 : 0);
  return [...checks].sort((a, b) => rank(a) - rank(b) || a.code.localeCompare(b.code));
}

/**
 * Why the health is what it is, in one sentence: HEALTH_OK with no check, or the number of
 * checks behind a warning or error (the checks themselves are listed beside it).
 */
export function healthReason(d: GetClusterDetailResponse | undefined): string {
  if (!d) return "";
  const active = d.checks.filter((c) => !c.muted);
  const muted = d.checks.length - active.length;
  const mutedText = muted ? ` (${muted} muted)` : "";
  if (d.health === "HEALTH_OK") {
    return d.checks.length ? `HEALTH_OK: only muted checks are active${mutedText}.` : "HEALTH_OK: no health check is active.";
  }
  if (d.checks.length === 0) return `${d.health || "Unknown health"}: the source names no check for it.`;
  const n = d.checks.length;
  return `${d.health} because of ${n} health check${n === 1 ? "" : "s"}${mutedText}: ${orderChecks(d.checks).map((c) => c.code).join(", ")}.`;
}

/** What a check says: its summary, or (the prometheus module gives none) its code. */
export function checkText(c: HealthCheck): string {
  return c.summary || c.code;
}

/** Which cluster this is: its fsid, or a sentence saying why there is none. */
export function clusterLine(d: GetClusterDetailResponse | undefined, fallbackId: string): string {
  const fsid = d?.fsid || fallbackId;
  const src = d?.source ?? ClusterSource.UNSPECIFIED;
  if (fsid) return `Ceph cluster ${fsid}${src === ClusterSource.ROOK ? " (as Rook reports it)" : ""}`;
  switch (src) {
    case ClusterSource.CEPH_PROMETHEUS:
      return "A Ceph cluster read through the mgr prometheus module, which does not give its fsid.";
    case ClusterSource.INVENTORY:
      return "No Ceph cluster is connected: health and capacity are those of the suite's own storage nodes (lvmd-agent) and machines (kaas).";
    case ClusterSource.ROOK:
      return "A Ceph cluster run by Rook, whose status gives no fsid yet.";
    default:
      return "Stats has not named the cluster yet.";
  }
}

/** A daemon's recent crashes in words: "3 times, last 5 min ago (2026-…)" or "once, at an unknown time". */
export function crashText(c: Crash, now: number): string {
  const times = c.count === 1 ? "once" : `${c.count} times`;
  const at = timestampMs(c.lastTime);
  if (!at) return `${times}, at an unknown time`;
  return `${times}, ${c.count === 1 ? "" : "last "}${ago(at, now)} (${new Date(at).toLocaleString()})`;
}

/** A pool's copies: "3 copies, 2 needed" (min_size unknown: "3 copies"). */
export function poolCopies(p: Pool): string {
  if (!p.size) return "unknown";
  const copies = `${p.size} ${p.size === 1 ? "copy" : "copies"}`;
  return p.minSize ? `${copies}, ${p.minSize} needed` : copies;
}

/** A pool's placement groups: "32 of 32 active+clean". */
export function poolPGs(p: Pool): string {
  return `${p.activeCleanPgs} of ${p.pgs} active+clean`;
}

/** A pool's data: "20 MiB in 236 objects". */
export function poolData(p: Pool): string {
  const n = Number(p.objects);
  return `${formatBytes(p.storedBytes)} in ${n} object${n === 1 ? "" : "s"}`;
}

/** An OSD's state in words: "up, in", "down, out". */
export function osdState(o: { up: boolean; in: boolean }): { level: Level; text: string } {
  const text = `${o.up ? "up" : "down"}, ${o.in ? "in" : "out"}`;
  return { level: o.up && o.in ? "ok" : o.up || o.in ? "warn" : "err", text };
}
