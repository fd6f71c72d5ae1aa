import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ActivitySchema, ListActivityResponseSchema } from "../gen/plinth/stats/v1/history_pb";
import { activityEntity, actorText, appendActivity, filterActivity } from "./activity";

const entry = (id: bigint, actorUsername = "", actorUserId = "") =>
  create(ActivitySchema, { id, subject: "plinth.lvmd.volume.created", summary: "volume v created", actorUsername, actorUserId });

describe("activity view logic", () => {
  it("names the actor, or the system for the services' own work", () => {
    expect(actorText(entry(1n, "ops", "u1"))).toEqual({ text: "ops", system: false });
    expect(actorText(entry(1n, "", "u1"))).toEqual({ text: "u1", system: false });
    expect(actorText(entry(1n))).toEqual({ text: "system", system: true });
  });
  it("tells what an entry is about from its subject", () => {
    expect(activityEntity("plinth.kaas.cluster.status_changed")).toBe("cluster");
    expect(activityEntity("plinth.lvmd.volume.removed")).toBe("volume");
    expect(activityEntity("odd")).toBe("odd");
  });
  it("appends older pages without duplicates and filters to people's changes", () => {
    const first = appendActivity([], create(ListActivityResponseSchema, { activities: [entry(5n, "ops"), entry(4n)] }));
    const both = appendActivity(first, create(ListActivityResponseSchema, { activities: [entry(4n), entry(3n, "ann")] }));
    expect(both.map((a) => a.id)).toEqual([5n, 4n, 3n]);
    expect(filterActivity(both, true).map((a) => a.id)).toEqual([5n, 3n]);
    expect(filterActivity(both, false)).toHaveLength(3);
  });
});
