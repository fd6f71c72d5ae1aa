// View logic of the storage overview: health levels, the radar's shape, capacity history.
import type { ClusterRadar } from "../gen/resources/stats/stats_pb";
import { ResourceStatus } from "../gen/resources/stats/stats_pb";
import type { GetCapacityHistoryResponse } from "../gen/plinth/stats/v1/history_pb";
import { formatBytes, percent, timestampMs } from "./format";

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

/** The points stats' history answered (plinth.stats.v1.HistoryService), as readings, oldest first. */
export function storedSamples(r: GetCapacityHistoryResponse | undefined): Sample[] {
  if (!r) return [];
  const out: Sample[] = [];
  for (const p of r.points) {
    const at = timestampMs(p.time);
    if (at > 0 && (out.length === 0 || at > out[out.length - 1].at)) {
      out.push({ at, used: Number(p.usedBytes), total: Number(p.totalBytes) });
    }
  }
  return out;
}

/**
 * The stored history extended by this visit's readings (those newer than its last point), at
 * most max readings (the oldest dropped).
 */
export function mergeHistory(stored: Sample[], live: Sample[], max: number): Sample[] {
  const last = stored.length ? stored[stored.length - 1].at : -Infinity;
  const next = [...stored, ...live.filter((s) => s.at > last)];
  return next.length > max ? next.slice(next.length - max) : next;
}

const reading = (s: Sample) => `${percent(s.used, s.total).toFixed(1)}% (${formatBytes(s.used)} of ${formatBytes(s.total)})`;

/**
 * The plot in words, for screen readers and as its caption: the span, where usage started and
 * ended, and its lowest and highest share. time formats a moment (tests pass a fixed one).
 */
export function historySummary(history: Sample[], time: (ms: number) => string = (ms) => new Date(ms).toLocaleString()): string {
  if (history.length === 0) return "No capacity readings yet.";
  const first = history[0];
  const last = history[history.length - 1];
  if (history.length === 1) return `One reading, at ${time(first.at)}: ${reading(first)} used.`;
  const shares = history.map((s) => percent(s.used, s.total));
  return (
    `${history.length} readings from ${time(first.at)} to ${time(last.at)}: ` +
    `${reading(first)} used at first, ${reading(last)} at last; ` +
    `lowest ${Math.min(...shares).toFixed(1)}%, highest ${Math.max(...shares).toFixed(1)}%.`
  );
}
