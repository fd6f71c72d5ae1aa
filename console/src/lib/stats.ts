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

/** The radar's axes, in drawing order, each with what its score means (stats' formulas). */
export const radarAxes: { key: keyof Pick<ClusterRadar, "clusterHealth" | "nodesHealth" | "capacityAvailable" | "stability" | "reliability">; label: string; meaning: string }[] = [
  { key: "clusterHealth", label: "Health", meaning: "100 for HEALTH_OK, 50 for HEALTH_WARN, 0 for HEALTH_ERR" },
  { key: "nodesHealth", label: "Nodes", meaning: "the share of the storage nodes that are ready" },
  { key: "capacityAvailable", label: "Free capacity", meaning: "the share of the raw capacity that is free (as under Capacity)" },
  { key: "stability", label: "Stability", meaning: "100, less 10 per active health check and 5 per change of state in the last hour" },
  { key: "reliability", label: "Reliability", meaning: "the share of the redundancy rules that hold (3 copies per pool, 3 monitors, …)" },
];

/** A share in percent with one decimal, as every capacity figure on the page shows it. */
export function share(part: number | bigint, total: number | bigint): number {
  return Math.round(percent(part, total) * 10) / 10;
}

/** The capacity in figures: what is used and what is free, each as bytes and a share of the total. */
export interface Capacity {
  used: number;
  free: number;
  total: number;
  usedPct: number;
  freePct: number;
}

/** The usage stats reported as used and free shares of the total; undefined before the first reading (no total). */
export function capacity(u: { used: bigint | number; available: bigint | number; total: bigint | number } | undefined): Capacity | undefined {
  if (!u || !(Number(u.total) > 0)) return undefined;
  const used = Number(u.used), free = Number(u.available), total = Number(u.total);
  return { used, free, total, usedPct: share(used, total), freePct: share(free, total) };
}

/**
 * The capacity in words: "1.2 GiB used (3.1%), 30 GiB free (96.9%) of 31 GiB". Used and free
 * need not add up to the total: Ceph keeps some raw space for itself.
 */
export function capacityText(c: Capacity | undefined): string {
  if (!c) return "No reading yet: stats has not reported any capacity.";
  return `${formatBytes(c.used)} used (${c.usedPct.toFixed(1)}%), ${formatBytes(c.free)} free (${c.freePct.toFixed(1)}%) of ${formatBytes(c.total)}`;
}

/** The radar's scores (percentages, 0–100, as stats and Koor's dashboard give them) as fractions 0–1, clamped. */
export function radarFractions(r: ClusterRadar): number[] {
  return radarAxes.map((a) => Math.max(0, Math.min(1, (Number(r[a.key]) || 0) / 100)));
}

/**
 * The radar's scores in percent with one decimal (0–100, clamped). With the capacity the page
 * shows, "Free capacity" is its free share, so the radar and the Capacity panel say the same
 * number (the two calls may otherwise be a refresh apart).
 */
export function radarValues(r: ClusterRadar, c?: Capacity): number[] {
  return radarFractions(r).map((f, i) => (radarAxes[i].key === "capacityAvailable" && c ? c.freePct : Math.round(f * 1000) / 10));
}

/** The radar in words (its accessible name and the list beside it): each axis with its score, e.g. "Health 100%, Nodes 50%". */
export function radarText(r: ClusterRadar, c?: Capacity): string {
  const v = radarValues(r, c);
  return radarAxes.map((a, i) => `${a.label} ${v[i]}%`).join(", ");
}

/** The radar's data for the chart: its axis labels and scores in percent. */
export function radarData(r: ClusterRadar, c?: Capacity): { labels: string[]; values: number[] } {
  return { labels: radarAxes.map((a) => a.label), values: radarValues(r, c) };
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

/** One point of the capacity plot: x the reading's time (ms since the epoch), y the share used (percent, 0–100). */
export interface PlotPoint {
  x: number;
  y: number;
}

/**
 * The history as the capacity plot's points: used/total in percent over time. A reading without
 * a total (stats had no capacity yet) is left out: it is no reading, not 0% used.
 */
export function capacityPoints(history: Sample[]): PlotPoint[] {
  return history.filter((s) => s.total > 0).map((s) => ({ x: s.at, y: Math.min(100, Math.round((s.used / s.total) * 10000) / 100) }));
}

/**
 * How to bring a plot showing shown up to date with next without redrawing it from scratch:
 * "same" (nothing to do), "append" with the points to push at the end and how many to drop at
 * the start (the live refresh extending a bounded series), or "replace" when next is not shown
 * extended (the stored history arrived after live readings, or an earlier point changed).
 */
export function plotUpdate(shown: PlotPoint[], next: PlotPoint[]): { kind: "same" } | { kind: "append"; drop: number; add: PlotPoint[] } | { kind: "replace" } {
  if (shown.length === 0) return next.length === 0 ? { kind: "same" } : { kind: "replace" };
  // Where the shown series' first point sits in next: the points dropped from its start.
  const lastShown = shown[shown.length - 1];
  let drop = 0;
  while (drop < shown.length && (next.length === 0 || shown[drop].x < next[0].x)) drop++;
  const kept = shown.length - drop;
  if (kept === 0 || kept > next.length) return { kind: "replace" };
  for (let i = 0; i < kept; i++) {
    const a = shown[drop + i], b = next[i];
    if (a.x !== b.x || a.y !== b.y) return { kind: "replace" };
  }
  if (next[kept - 1].x !== lastShown.x) return { kind: "replace" };
  const add = next.slice(kept);
  return drop === 0 && add.length === 0 ? { kind: "same" } : { kind: "append", drop, add };
}

/** A time on the plot's axis for a plot spanning spanMs: with seconds up to 15 minutes, hours and minutes up to a day, else the date. */
export function axisTime(ms: number, spanMs: number, locale?: string): string {
  const d = new Date(ms);
  if (spanMs <= 15 * 60 * 1000) return d.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  if (spanMs <= 24 * 3600 * 1000) return d.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit" });
  return d.toLocaleDateString(locale, { month: "short", day: "numeric" });
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

const reading = (s: Sample) => `${share(s.used, s.total).toFixed(1)}% (${formatBytes(s.used)} of ${formatBytes(s.total)})`;

/**
 * The plot in words, for screen readers and as its caption: the span, where usage started and
 * ended, and its lowest and highest share. time formats a moment (tests pass a fixed one).
 */
export function historySummary(all: Sample[], time: (ms: number) => string = (ms) => new Date(ms).toLocaleString()): string {
  // Readings without a total (stats had no capacity yet) say nothing about usage.
  const history = all.filter((s) => s.total > 0);
  if (history.length === 0) return "No reading yet: the plot starts with stats' first capacity reading.";
  const first = history[0];
  const last = history[history.length - 1];
  if (history.length === 1) return `One reading, at ${time(first.at)}: ${reading(first)} used.`;
  const shares = history.map((s) => share(s.used, s.total));
  return (
    `${history.length} readings from ${time(first.at)} to ${time(last.at)}: ` +
    `${reading(first)} used at first, ${reading(last)} at last; ` +
    `lowest ${Math.min(...shares).toFixed(1)}%, highest ${Math.max(...shares).toFixed(1)}% used.`
  );
}
