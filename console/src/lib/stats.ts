// View logic of the storage overview: health levels, the radar's shape, capacity history.
import type { ClusterRadar } from "../gen/resources/stats/stats_pb";
import { ResourceStatus } from "../gen/resources/stats/stats_pb";

/** How a health or status reads at a glance. */
export type Level = "ok" | "warn" | "err" | "unknown";

/** Ceph's overall health (HEALTH_OK / HEALTH_WARN / HEALTH_ERR) as a level and words. */
export function health(status: string): { level: Level; text: string } {
  switch (status.toUpperCase()) {
    case "HEALTH_OK":
      return { level: "ok", text: "Healthy" };
    case "HEALTH_WARN":
      return { level: "warn", text: "Warning" };
    case "HEALTH_ERR":
      return { level: "err", text: "Error" };
    default:
      return { level: "unknown", text: status ? status : "Unknown" };
  }
}

/** A node's or resource's readiness as a level and words. */
export function readiness(s: ResourceStatus): { level: Level; text: string } {
  switch (s) {
    case ResourceStatus.RESOURCE_READY:
      return { level: "ok", text: "Ready" };
    case ResourceStatus.RESOURCE_PROGRESSING:
      return { level: "warn", text: "Progressing" };
    case ResourceStatus.RESOURCE_NOT_READY:
      return { level: "err", text: "Not ready" };
    default:
      return { level: "unknown", text: "Unknown" };
  }
}

/** The radar's axes, in drawing order. */
export const radarAxes: { key: keyof Pick<ClusterRadar, "clusterHealth" | "nodesHealth" | "capacityAvailable" | "stability" | "reliability">; label: string }[] = [
  { key: "clusterHealth", label: "Health" },
  { key: "nodesHealth", label: "Nodes" },
  { key: "capacityAvailable", label: "Capacity" },
  { key: "stability", label: "Stability" },
  { key: "reliability", label: "Reliability" },
];

/** The radar's scores (percentages, 0–100, as stats and Koor's dashboard give them) as fractions 0–1, clamped. */
export function radarFractions(r: ClusterRadar): number[] {
  return radarAxes.map((a) => Math.max(0, Math.min(1, (Number(r[a.key]) || 0) / 100)));
}

/** The points of a polygon for fractions on axes around (c, c) with radius r, first axis up. */
export function polygon(fractions: number[], c: number, r: number): string {
  const n = fractions.length;
  return fractions
    .map((f, i) => {
      const a = -Math.PI / 2 + (2 * Math.PI * i) / n;
      return `${(c + Math.cos(a) * r * f).toFixed(1)},${(c + Math.sin(a) * r * f).toFixed(1)}`;
    })
    .join(" ");
}

/** One capacity reading. */
export interface Sample {
  at: number;
  used: number;
  total: number;
}

/** Adds a reading to the history (dropping one equal to the last), keeping at most max. */
export function addSample(history: Sample[], s: Sample, max: number): Sample[] {
  const last = history[history.length - 1];
  if (last && last.at === s.at) return history;
  const next = [...history, s];
  return next.length > max ? next.slice(next.length - max) : next;
}

/** The history as an SVG polyline of used/total, width w and height h (empty for < 2). */
export function sparkline(history: Sample[], w: number, h: number): string {
  if (history.length < 2) return "";
  const t0 = history[0].at;
  const span = Math.max(1, history[history.length - 1].at - t0);
  return history
    .map((s) => {
      const x = ((s.at - t0) / span) * w;
      const frac = s.total > 0 ? Math.min(1, s.used / s.total) : 0;
      return `${x.toFixed(1)},${(h - frac * h).toFixed(1)}`;
    })
    .join(" ");
}
