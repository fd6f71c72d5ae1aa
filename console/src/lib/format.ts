// Numbers and times as people read them.
import type { Timestamp } from "@bufbuild/protobuf/wkt";

const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 1536 → "1.5 KiB". */
export function formatBytes(n: number | bigint): string {
  let v = typeof n === "bigint" ? Number(n) : n;
  if (!Number.isFinite(v) || v < 0) return "—";
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** used of total as a percentage 0–100 (0 when total is unknown). */
export function percent(used: number | bigint, total: number | bigint): number {
  const u = Number(used);
  const t = Number(total);
  if (!(t > 0) || !(u >= 0)) return 0;
  return Math.min(100, (u / t) * 100);
}

/** A protobuf Timestamp as ms since the epoch (0 when unset). */
export function timestampMs(t: Timestamp | undefined): number {
  if (!t) return 0;
  return Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);
}

/** How long ago a time was, coarsely: "just now", "5 min ago", "3 h ago", "2 days ago". */
export function ago(ms: number, now: number): string {
  if (!ms) return "—";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 10) return "just now";
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  const d = Math.floor(s / 86400);
  return `${d} day${d === 1 ? "" : "s"} ago`;
}

/** A local date and time, or "—" when unset. */
export function when(ms: number): string {
  return ms ? new Date(ms).toLocaleString() : "—";
}
