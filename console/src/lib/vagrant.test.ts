import { describe, expect, it } from "vitest";
import { create, toBinary, fromBinary } from "@bufbuild/protobuf";
import {
  GetJobStreamResponse_Terminal_EventSchema as EventSchema,
  JobSchema,
  Job_State,
  QueueJobRequestSchema,
} from "../gen/hashicorp/vagrant/server_pb";
import { cancelJobQuestion, filterJobs, isCanceled, isFinished, jobError, jobFilters, jobState, newJob, operationOf, sortJobs, terminalLines, type JobFilter } from "./vagrant";

const ts = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("vagrant view logic", () => {
  it("words job states and knows which have ended", () => {
    expect(jobState(Job_State.QUEUED).text).toBe("Queued");
    expect(jobState(Job_State.RUNNING).level).toBe("warn");
    expect(jobState(Job_State.SUCCESS).level).toBe("ok");
    expect(jobState(Job_State.ERROR).level).toBe("err");
    expect(isFinished(Job_State.SUCCESS) && isFinished(Job_State.ERROR)).toBe(true);
    expect(isFinished(Job_State.WAITING) || isFinished(Job_State.RUNNING) || isFinished(Job_State.QUEUED)).toBe(false);
  });

  it("shows a canceled job as Canceled, not as a failure", () => {
    const canceled = create(JobSchema, { state: Job_State.ERROR, cancelTime: ts(100), error: { code: 1, message: "job canceled" } });
    expect(isCanceled(canceled)).toBe(true);
    expect(jobState(canceled.state, isCanceled(canceled))).toEqual({ level: "unknown", text: "Canceled" });
    expect(jobError(canceled)).toBe("");
    const failed = create(JobSchema, { state: Job_State.ERROR, error: { code: 2, message: "provider exploded" } });
    expect(isCanceled(failed)).toBe(false);
    expect(jobState(failed.state, isCanceled(failed)).text).toBe("Failed");
    expect(jobError(failed)).toBe("provider exploded");
    // Cancel requested, still running: running until it ends.
    const stopping = create(JobSchema, { state: Job_State.RUNNING, cancelTime: ts(100) });
    expect(jobState(stopping.state, isCanceled(stopping)).text).toBe("Running");
  });

  it("names operations", () => {
    expect(operationOf(create(JobSchema, { operation: { case: "noop", value: {} } }))).toBe("noop");
    expect(operationOf(create(JobSchema, { operation: { case: "command", value: { command: "up" } } }))).toBe("command up");
    expect(operationOf(create(JobSchema, { operation: { case: "initBasis", value: {} } }))).toBe("init_basis");
    expect(operationOf(create(JobSchema, {}))).toBe("unknown");
  });

  it("queues a job vagrant-server accepts: any runner, an operation, no id, an expiry", () => {
    const req = newJob("noop", "", "10m");
    const wire = fromBinary(QueueJobRequestSchema, toBinary(QueueJobRequestSchema, req));
    expect(wire.expiresIn).toBe("10m");
    expect(wire.job?.id).toBe("");
    expect(wire.job?.targetRunner?.target.case).toBe("any");
    expect(wire.job?.operation.case).toBe("noop");
    const pinned = newJob("init", "r1", "1m");
    expect(pinned.job?.targetRunner?.target).toEqual({ case: "id", value: expect.objectContaining({ id: "r1" }) });
    expect(pinned.job?.operation.case).toBe("init");
  });

  it("sorts jobs newest first", () => {
    const jobs = [
      create(JobSchema, { id: "a", queueTime: ts(1), assignedRunner: { id: "r1" }, completeTime: ts(5) }),
      create(JobSchema, { id: "b", queueTime: ts(3), assignedRunner: { id: "r2" }, ackTime: ts(4) }),
      create(JobSchema, { id: "c", queueTime: ts(2), assignedRunner: { id: "r1" }, completeTime: ts(9) }),
      create(JobSchema, { id: "d", queueTime: ts(4) }),
    ];
    expect(sortJobs(jobs).map((j) => j.id)).toEqual(["d", "b", "c", "a"]);
  });

  it("filters jobs by how they ended and orders them", () => {
    const jobs = [
      create(JobSchema, { id: "ok", queueTime: ts(1), state: Job_State.SUCCESS }),
      create(JobSchema, { id: "bad", queueTime: ts(2), state: Job_State.ERROR, error: { code: 2, message: "boom" } }),
      create(JobSchema, { id: "stopped", queueTime: ts(3), state: Job_State.ERROR, cancelTime: ts(4), error: { code: 1, message: "job canceled" } }),
      create(JobSchema, { id: "waiting", queueTime: ts(5), state: Job_State.QUEUED }),
      create(JobSchema, { id: "stopping", queueTime: ts(6), state: Job_State.RUNNING, cancelTime: ts(7) }),
    ];
    const ids = (f: JobFilter, oldest = false) => filterJobs(jobs, f, oldest).map((j) => j.id);
    expect(ids("all")).toEqual(["stopping", "waiting", "stopped", "bad", "ok"]);
    expect(ids("all", true)).toEqual(["ok", "bad", "stopped", "waiting", "stopping"]);
    expect(ids("active")).toEqual(["stopping", "waiting"]);
    expect(ids("succeeded")).toEqual(["ok"]);
    expect(ids("failed")).toEqual(["bad"]);
    expect(ids("canceled")).toEqual(["stopped"]);
    expect(jobFilters.map((f) => f.value)).toContain("canceled");
  });

  it("renders terminal events as lines", () => {
    const ev = (e: object) => create(EventSchema, { event: e as never });
    const lines = terminalLines([
      ev({ case: "line", value: { msg: "hello" } }),
      ev({ case: "status", value: { status: "running", msg: "booting" } }),
      ev({ case: "namedValues", value: { values: [{ name: "box", value: "debian" }] } }),
      ev({ case: "raw", value: { data: new TextEncoder().encode("one\r\ntwo\n") } }),
      ev({ case: "table", value: { headers: ["A", "B"], rows: [{ entries: [{ value: "1" }, { value: "2" }] }] } }),
      ev({ case: "step", value: { msg: "step", output: new TextEncoder().encode("out\n") } }),
      ev({ case: "stepGroup", value: { close: true } }),
    ]);
    expect(lines).toEqual(["hello", "running: booting", "box: debian", "one", "two", "A\tB", "1\t2", "step", "out"]);
  });
});

describe("registryTree", () => {
  it("nests projects under their basis and targets under their project", async () => {
    const { registryTree } = await import("./vagrant");
    const tree = registryTree(
      [{ resourceId: "b2", name: "zeta", path: "/z" }, { resourceId: "b1", name: "alpha", path: "/a" }] as never,
      [
        { resourceId: "p1", name: "web", path: "/a/web", basis: { resourceId: "b1" } },
        { resourceId: "p2", name: "orphan", path: "/x", basis: { resourceId: "gone" } },
      ] as never,
      [{ resourceId: "t1", name: "vm1", project: { resourceId: "p1" } }] as never,
    );
    expect(tree).toEqual([
      { id: "b1", name: "alpha", path: "/a", projects: [{ id: "p1", name: "web", path: "/a/web", targets: [{ id: "t1", name: "vm1" }] }] },
      { id: "b2", name: "zeta", path: "/z", projects: [] },
    ]);
  });
});

describe("cancelJobQuestion", () => {
  it("names the job and its operation and says what cancelling does not do", () => {
    const q = cancelJobQuestion("01ABC", "up");
    expect(q).toMatch(/^Cancel job 01ABC \(up\)\?/);
    expect(q).toMatch(/does not undo/);
  });
});
