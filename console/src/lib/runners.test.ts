import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { ListRunnersResponseSchema, RunnerSchema } from "../gen/plinth/vagrant/v1/runners_pb";
import { allRunners, runnerComponents, runnerJob, runnerState, sortRunners } from "./runners";

const now = Date.UTC(2026, 10, 24, 6, 0, 0);
const runner = (id: string, online = true) => create(RunnerSchema, { id, online });

describe("runners view logic", () => {
  it("follows page tokens and stops at the cap", async () => {
    const ids = ["a", "b", "c", "d", "e"];
    const asked: { pageSize: number; pageToken: string }[] = [];
    // Pages of two, as a server with page_size 2 answers, keyed by the last id.
    const list = async (req: { pageSize: number; pageToken: string }) => {
      asked.push(req);
      const start = req.pageToken ? ids.indexOf(req.pageToken) + 1 : 0;
      const page = ids.slice(start, start + Math.min(2, req.pageSize));
      const next = start + page.length < ids.length ? page[page.length - 1] : "";
      return create(ListRunnersResponseSchema, { runners: page.map((id) => runner(id)), nextPageToken: next });
    };
    const all = await allRunners(list);
    expect(all.runners.map((r) => r.id)).toEqual(ids);
    expect(all.more).toBe(false);
    expect(asked.map((r) => r.pageToken)).toEqual(["", "b", "d"]);
    const capped = await allRunners(list, 3);
    expect(capped.runners.map((r) => r.id)).toEqual(["a", "b", "c"]);
    expect(capped.more).toBe(true);
    expect(asked.slice(-2).map((r) => r.pageSize)).toEqual([3, 1]);
  });

  it("lists online runners first, then by id", () => {
    expect(sortRunners([runner("b", false), runner("c"), runner("a", false), runner("a2")]).map((r) => r.id)).toEqual(["a2", "c", "a", "b"]);
  });

  it("words online and offline, with when an offline runner was last seen", () => {
    expect(runnerState(runner("a"), now)).toEqual({ level: "ok", text: "Online" });
    const gone = create(RunnerSchema, { id: "b", online: false, lastSeen: timestampFromMs(now - 5 * 60_000) });
    expect(runnerState(gone, now).level).toBe("err");
    expect(runnerState(gone, now).text).toMatch(/^Offline \(last seen 5 min ago\)$/);
    expect(runnerState(runner("c", false), now).text).toBe("Offline");
  });

  it("says what a runner can take", () => {
    expect(runnerComponents(runner("a"))).toBe("any job (no components declared)");
    const r = create(RunnerSchema, { id: "r", byIdOnly: true, components: [{ type: "COMMAND", name: "up" }, { type: "PROVIDER", name: "netns" }] });
    expect(runnerComponents(r)).toBe("command up, provider netns; only jobs addressed to it");
  });

  it("names the job a runner holds", () => {
    expect(runnerJob(runner("a"))).toBe("");
    const r = create(RunnerSchema, { id: "r", currentJob: { id: "01J", operation: "noop", state: "RUNNING" } });
    expect(runnerJob(r)).toBe("running noop job 01J");
    r.currentJob!.state = "WAITING";
    expect(runnerJob(r)).toBe("assigned noop job 01J");
  });
});
