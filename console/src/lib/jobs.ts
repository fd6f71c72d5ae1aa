// View logic of the Volumes page's jobs panel: lvmd-agent's backups and restores
// (plinth.lvmd.v1.JobService) with their progress, in words, and how often to refresh.
import { JobKind, JobState, type Job } from "../gen/plinth/lvmd/v1/jobs_pb";
import { formatBytes, percent, timestampMs } from "./format";
import type { Badge } from "./backups";

/** Refresh this often while a job runs: the agent records progress every 2 s. */
export const runningRefreshMs = 2000;
/** Refresh this often otherwise (a job started by TopoLVM shows up within this time). */
export const idleRefreshMs = 15000;

/** Jobs per page at first, and the step "Show older" adds (the API takes at most 500). */
export const jobPageStep = 50;
export const maxJobPage = 500;

/** A job's kind in words. */
export function jobKind(k: JobKind): string {
  switch (k) {
    case JobKind.BACKUP:
      return "Backup";
    case JobKind.RESTORE:
      return "Restore";
    default:
      return "Unknown";
  }
}

/** A job's state as a badge; an interrupted job says that asking again restarts it. */
export function jobState(j: Pick<Job, "state" | "retryable">): Badge {
  switch (j.state) {
    case JobState.IN_PROGRESS:
      return { level: "warn", text: "In progress" };
    case JobState.COMPLETE:
      return { level: "ok", text: "Complete" };
    case JobState.ERROR:
      return { level: "err", text: j.retryable ? "Interrupted" : "Failed" };
    default:
      return { level: "unknown", text: "Unknown" };
  }
}

/** A job's progress: a whole percentage 0–100 and "copied of total (n %)". */
export interface Progress {
  percent: number;
  text: string;
}

/** How far a job got: bytes copied of the bytes it copies in all. */
export function jobProgress(j: Pick<Job, "bytesDone" | "sizeBytes" | "state">): Progress {
  if (j.sizeBytes <= 0n) {
    return { percent: j.state === JobState.COMPLETE ? 100 : 0, text: `${formatBytes(j.bytesDone)} copied` };
  }
  // Floor, so a job shows 100 % only when every byte is copied.
  const p = Math.floor(percent(j.bytesDone, j.sizeBytes));
  const pct = j.bytesDone >= j.sizeBytes ? 100 : Math.min(p, 99);
  return { percent: pct, text: `${formatBytes(j.bytesDone)} of ${formatBytes(j.sizeBytes)} (${pct} %)` };
}

/** Whether any job is still copying (the list then refreshes quickly). */
export function anyRunning(jobs: readonly Pick<Job, "state">[] | undefined): boolean {
  return !!jobs?.some((j) => j.state === JobState.IN_PROGRESS);
}

/** How long a job ran ("—" without a start), up to now while it runs. */
export function jobDuration(j: Pick<Job, "startTime" | "finishTime">, now: number): string {
  const start = timestampMs(j.startTime);
  if (!start) return "—";
  const end = timestampMs(j.finishTime) || now;
  const s = Math.max(0, Math.round((end - start) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
