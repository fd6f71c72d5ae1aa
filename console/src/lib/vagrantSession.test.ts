import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { RunnerSchema } from "../gen/plinth/vagrant/v1/runners_pb";
import { keptChoice, renewBeforeMs, renewDelay, runnerChoices } from "./vagrantSession";

const runner = (id: string, online: boolean, byIdOnly = false) => create(RunnerSchema, { id, online, byIdOnly });

describe("vagrant session token", () => {
  it("is renewed before it expires", () => {
    expect(renewDelay(3_600_000, 0)).toBe(2_880_000); // an hour: at 48 min
    expect(renewDelay(120_000, 0)).toBe(120_000 - renewBeforeMs); // two minutes: a minute before
    expect(renewDelay(30_000, 0)).toBe(1_000); // under a minute: soon, not in a loop
    expect(renewDelay(0, 5_000)).toBe(1_000); // already past (a clock ahead)
  });
});

describe("runner choices", () => {
  it("offer any runner, then the registered runners, online first", () => {
    expect(runnerChoices([runner("b", false), runner("c", true, true), runner("a", true)])).toEqual([
      { value: "", label: "Any runner" },
      { value: "a", label: "a (online)" },
      { value: "c", label: "c (online, only jobs addressed to it)" },
      { value: "b", label: "b (offline: the job waits for it)" },
    ]);
    expect(runnerChoices([])).toEqual([{ value: "", label: "Any runner" }]);
  });

  it("keep a chosen runner only while it is listed", () => {
    expect(keptChoice("a", [runner("a", false)])).toBe("a");
    expect(keptChoice("gone", [runner("a", true)])).toBe("");
    expect(keptChoice("", [])).toBe("");
  });
});
