import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ClusterRadarSchema, ResourceStatus } from "../gen/resources/stats/stats_pb";
import { addSample, health, polygon, radarFractions, readiness, sparkline } from "./stats";

describe("stats view logic", () => {
  it("reads Ceph health", () => {
    expect(health("HEALTH_OK")).toEqual({ level: "ok", text: "Healthy" });
    expect(health("HEALTH_WARN").level).toBe("warn");
    expect(health("HEALTH_ERR").level).toBe("err");
    expect(health("")).toEqual({ level: "unknown", text: "Unknown" });
    expect(health("odd").text).toBe("odd");
  });
  it("reads readiness", () => {
    expect(readiness(ResourceStatus.RESOURCE_READY).level).toBe("ok");
    expect(readiness(ResourceStatus.RESOURCE_NOT_READY).text).toBe("Not ready");
    expect(readiness(ResourceStatus.RESOURCE_UNKNOWN).level).toBe("unknown");
  });
  it("reads radar scores as percentages, clamped", () => {
    const pct = create(ClusterRadarSchema, { clusterHealth: 100, nodesHealth: 50, capacityAvailable: 25, stability: 0, reliability: 150 });
    expect(radarFractions(pct)).toEqual([1, 0.5, 0.25, 0, 1]);
    const low = create(ClusterRadarSchema, { clusterHealth: 1, nodesHealth: -5 });
    expect(radarFractions(low)).toEqual([0.01, 0, 0, 0, 0]);
  });
  it("draws the radar's first axis straight up", () => {
    const pts = polygon([1, 0, 0, 0], 100, 50).split(" ");
    expect(pts[0]).toBe("100.0,50.0");
    expect(pts).toHaveLength(4);
  });
  it("keeps a bounded capacity history without duplicates", () => {
    let h = addSample([], { at: 1, used: 1, total: 4 }, 3);
    h = addSample(h, { at: 1, used: 1, total: 4 }, 3);
    expect(h).toHaveLength(1);
    for (let i = 2; i <= 5; i++) h = addSample(h, { at: i, used: i, total: 10 }, 3);
    expect(h.map((s) => s.at)).toEqual([3, 4, 5]);
  });
  it("plots used/total over time", () => {
    expect(sparkline([{ at: 0, used: 0, total: 1 }], 100, 10)).toBe("");
    expect(sparkline([{ at: 0, used: 0, total: 4 }, { at: 10, used: 4, total: 4 }], 100, 10)).toBe("0.0,10.0 100.0,0.0");
  });
});
