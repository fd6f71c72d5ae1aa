// View logic of the Vagrant page: job states, what a job does, its terminal output as lines,
// and the jobs the console queues (the runner list is lib/runners.ts).
import { create } from "@bufbuild/protobuf";
import {
  Job_State,
  QueueJobRequestSchema,
  type GetJobStreamResponse_Terminal_Event,
  type Job,
  type QueueJobRequest,
} from "../gen/hashicorp/vagrant/server_pb";
import type { Ref_Basis, Ref_Project, Ref_Target } from "../gen/hashicorp/vagrant/sdk/plugin_pb";
import type { Level } from "./stats";
import { timestampMs } from "./format";

/** A job's state as a level and words. */
export function jobState(s: Job_State, canceled = false): { level: Level; text: string } {
  // vagrant-server ends a canceled job in ERROR ("job canceled"): the operator asked for it,
  // it did not fail.
  if (canceled && s === Job_State.ERROR) return { level: "unknown", text: "Canceled" };
  switch (s) {
    case Job_State.QUEUED:
      return { level: "unknown", text: "Queued" };
    case Job_State.WAITING:
      return { level: "warn", text: "Assigned" };
    case Job_State.RUNNING:
      return { level: "warn", text: "Running" };
    case Job_State.SUCCESS:
      return { level: "ok", text: "Succeeded" };
    case Job_State.ERROR:
      return { level: "err", text: "Failed" };
    default:
      return { level: "unknown", text: "Unknown" };
  }
}

/** The question the console asks before it cancels a job (window.confirm). */
export function cancelJobQuestion(id: string, operation: string): string {
  return `Cancel job ${id} (${operation})? A running job is stopped where it is; the runner does not undo what it did.`;
}

/** Whether a job has ended (nothing left to cancel or to stream). */
export function isFinished(s: Job_State): boolean {
  return s === Job_State.SUCCESS || s === Job_State.ERROR;
}

/** The operation a job runs, as its proto field name ("noop", "command ssh"). */
export function operationOf(job: Job): string {
  const op = job.operation;
  if (op.case === "command") return `command ${op.value.command}`.trim();
  if (op.case === "initBasis") return "init_basis";
  if (op.case === "initProject") return "init_project";
  return op.case ?? "unknown";
}

/** Whether cancelling the job was requested (its cancel time is set). */
export function isCanceled(job: Job): boolean {
  return timestampMs(job.cancelTime) > 0;
}

/** A job's failure in words, "" when it has none (a canceled job did not fail). */
export function jobError(job: Job): string {
  if (isCanceled(job) && job.state === Job_State.ERROR) return "";
  return job.error?.message ?? "";
}

/** Jobs newest first (by queue time, then id). */
export function sortJobs(jobs: Job[]): Job[] {
  return [...jobs].sort((a, b) => timestampMs(b.queueTime) - timestampMs(a.queueTime) || b.id.localeCompare(a.id));
}

/** Which jobs the table shows: all, those not ended yet, or those that ended one way. */
export const jobFilters = [
  { value: "all", label: "All jobs" },
  { value: "active", label: "Queued or running" },
  { value: "succeeded", label: "Succeeded" },
  { value: "failed", label: "Failed" },
  { value: "canceled", label: "Canceled" },
] as const;
export type JobFilter = (typeof jobFilters)[number]["value"];

/** The jobs filter keeps, newest first (sortJobs) or oldest first. */
export function filterJobs(jobs: Job[], filter: JobFilter, oldestFirst = false): Job[] {
  const keep = (j: Job): boolean => {
    const canceled = isCanceled(j) && j.state === Job_State.ERROR;
    switch (filter) {
      case "active":
        return !isFinished(j.state);
      case "succeeded":
        return j.state === Job_State.SUCCESS;
      case "failed":
        return j.state === Job_State.ERROR && !canceled;
      case "canceled":
        return canceled;
      default:
        return true;
    }
  };
  const out = sortJobs(jobs.filter(keep));
  return oldestFirst ? out.reverse() : out;
}

/** Operations the console can queue without a project: they need nothing but a runner. */
export const queueableOps = [
  { op: "noop", label: "No-op (checks the runner round trip)" },
  { op: "init", label: "Init (lists the runner's commands and providers)" },
] as const;

/** The operation names of queueableOps. */
export type QueueableOp = (typeof queueableOps)[number]["op"];

/**
 * A QueueJob request for op on any runner (or the runner with runnerId), expiring when no
 * runner takes it within expiresIn (a Go duration).
 */
export function newJob(op: QueueableOp, runnerId: string, expiresIn: string): QueueJobRequest {
  return create(QueueJobRequestSchema, {
    expiresIn,
    job: {
      targetRunner: {
        target: runnerId ? { case: "id", value: { id: runnerId } } : { case: "any", value: {} },
      },
      operation: { case: op, value: {} },
      labels: { "plinth.dev/queued-by": "console" },
    },
  });
}

const decoder = new TextDecoder();

/** Terminal events as lines of text, in order (raw output split at newlines). */
export function terminalLines(events: GetJobStreamResponse_Terminal_Event[]): string[] {
  const out: string[] = [];
  const text = (s: string) => {
    const parts = s.replace(/\r\n/g, "\n").split("\n");
    if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
    out.push(...parts);
  };
  for (const e of events) {
    const ev = e.event;
    switch (ev.case) {
      case "line":
        text(ev.value.msg);
        break;
      case "status":
        if (ev.value.msg) text(ev.value.status ? `${ev.value.status}: ${ev.value.msg}` : ev.value.msg);
        break;
      case "namedValues":
        for (const nv of ev.value.values) out.push(`${nv.name}: ${nv.value}`);
        break;
      case "raw":
        text(decoder.decode(ev.value.data));
        break;
      case "table":
        if (ev.value.headers.length) out.push(ev.value.headers.join("\t"));
        for (const row of ev.value.rows) out.push(row.entries.map((c) => c.value).join("\t"));
        break;
      case "step":
        if (ev.value.msg) text(ev.value.msg);
        if (ev.value.output.length) text(decoder.decode(ev.value.output));
        break;
      default:
        break;
    }
  }
  return out;
}

/** A basis with its projects and their targets. */
export interface BasisNode {
  id: string;
  name: string;
  path: string;
  projects: { id: string; name: string; path: string; targets: { id: string; name: string }[] }[];
}

/**
 * Nests the flat registry lists by their references (a project names its basis by resource
 * id; a target its project). Projects or targets whose parent is not listed are dropped.
 */
export function registryTree(bases: Ref_Basis[], projects: Ref_Project[], targets: Ref_Target[]): BasisNode[] {
  const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
  return [...bases].sort(byName).map((b) => ({
    id: b.resourceId,
    name: b.name,
    path: b.path,
    projects: projects
      .filter((p) => p.basis?.resourceId === b.resourceId)
      .sort(byName)
      .map((p) => ({
        id: p.resourceId,
        name: p.name,
        path: p.path,
        targets: targets
          .filter((t) => t.project?.resourceId === p.resourceId)
          .sort(byName)
          .map((t) => ({ id: t.resourceId, name: t.name })),
      })),
  }));
}
