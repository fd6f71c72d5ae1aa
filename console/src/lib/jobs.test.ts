import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { JobKind, JobSchema, JobState } from "../gen/plinth/lvmd/v1/jobs_pb";
import { anyRunning, jobDuration, jobKind, jobProgress, jobState } from "./jobs";

const GiB = 1024n ** 3n;
const now = Date.UTC(2026, 10, 24, 6, 0, 0);

describe("jobs view logic", () => {
  it("words kinds and states", () => {
    expect(jobKind(JobKind.BACKUP)).toBe("Backup");
    expect(jobKind(JobKind.RESTORE)).toBe("Restore");
    expect(jobKind(JobKind.UNSPECIFIED)).toBe("Unknown");
    expect(jobState({ state: JobState.IN_PROGRESS, retryable: false })).toEqual({ level: "warn", text: "In progress" });
    expect(jobState({ state: JobState.COMPLETE, retryable: false })).toEqual({ level: "ok", text: "Complete" });
    expect(jobState({ state: JobState.ERROR, retryable: false })).toEqual({ level: "err", text: "Failed" });
    expect(jobState({ state: JobState.ERROR, retryable: true })).toEqual({ level: "err", text: "Interrupted" });
    expect(jobState({ state: JobState.UNSPECIFIED, retryable: false }).level).toBe("unknown");
  });
  it("shows progress as bytes and a whole percentage", () => {
    expect(jobProgress({ bytesDone: 0n, sizeBytes: GiB, state: JobState.IN_PROGRESS })).toEqual({ percent: 0, text: "0 B of 1.0 GiB (0 %)" });
    expect(jobProgress({ bytesDone: GiB / 2n, sizeBytes: GiB, state: JobState.IN_PROGRESS })).toEqual({ percent: 50, text: "512 MiB of 1.0 GiB (50 %)" });
    // Nearly done is not done: 100 % only when every byte is copied.
    expect(jobProgress({ bytesDone: GiB - 1n, sizeBytes: GiB, state: JobState.IN_PROGRESS }).percent).toBe(99);
    expect(jobProgress({ bytesDone: GiB, sizeBytes: GiB, state: JobState.COMPLETE }).percent).toBe(100);
    // A size the agent did not know yet.
    expect(jobProgress({ bytesDone: 2048n, sizeBytes: 0n, state: JobState.IN_PROGRESS })).toEqual({ percent: 0, text: "2.0 KiB copied" });
    expect(jobProgress({ bytesDone: 0n, sizeBytes: 0n, state: JobState.COMPLETE }).percent).toBe(100);
  });
  it("knows when a job runs, to refresh quickly", () => {
    expect(anyRunning(undefined)).toBe(false);
    expect(anyRunning([])).toBe(false);
    expect(anyRunning([{ state: JobState.COMPLETE }, { state: JobState.ERROR }])).toBe(false);
    expect(anyRunning([{ state: JobState.COMPLETE }, { state: JobState.IN_PROGRESS }])).toBe(true);
  });
  it("says how long a job ran", () => {
    const j = create(JobSchema, { startTime: timestampFromMs(now - 75_000) });
    expect(jobDuration(j, now)).toBe("1 min 15 s");
    expect(jobDuration(create(JobSchema, { startTime: timestampFromMs(now - 10_000), finishTime: timestampFromMs(now - 4_000) }), now)).toBe("6 s");
    expect(jobDuration(create(JobSchema, { startTime: timestampFromMs(now - 3_700_000) }), now)).toBe("1 h 1 min");
    expect(jobDuration(create(JobSchema, {}), now)).toBe("—");
  });
});
