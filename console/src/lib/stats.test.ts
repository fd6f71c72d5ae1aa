import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ClusterRadarSchema, ResourceStatus } from "../gen/resources/stats/stats_pb";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { CapacityPointSchema, GetCapacityHistoryResponseSchema } from "../gen/plinth/stats/v1/history_pb";
import {
  addSample, axisTime, capacity, capacityPoints, capacityText, health, historySummary, mergeHistory, plotUpdate, radarAxes, radarData, radarFractions, radarText, readiness, share, storedSamples,
} from "./stats";

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
  it("gives the radar's data to the chart and in words", () => {
    const r = create(ClusterRadarSchema, { clusterHealth: 100, nodesHealth: 50.44, capacityAvailable: 25, stability: -3, reliability: 150 });
    expect(radarData(r)).toEqual({ labels: ["Health", "Nodes", "Free capacity", "Stability", "Reliability"], values: [100, 50.4, 25, 0, 100] });
    expect(radarText(r)).toBe("Health 100%, Nodes 50.4%, Free capacity 25%, Stability 0%, Reliability 100%");
    expect(radarAxes.every((a) => a.meaning.length > 0)).toBe(true);
  });
  it("says used and free with the same shares in the panel and on the radar", () => {
    expect(capacity(undefined)).toBeUndefined();
    expect(capacity({ used: 0n, available: 0n, total: 0n })).toBeUndefined();
    expect(capacityText(undefined)).toMatch(/^No reading yet/);
    const c = capacity({ used: 31n * 1024n ** 2n, available: 969n * 1024n ** 2n, total: 1000n * 1024n ** 2n })!;
    expect(c).toMatchObject({ usedPct: 3.1, freePct: 96.9 });
    expect(capacityText(c)).toBe("31 MiB used (3.1%), 969 MiB free (96.9%) of 1000 MiB");
    // The radar's score is from another call, maybe a refresh older: the page shows the panel's share.
    const r = create(ClusterRadarSchema, { clusterHealth: 100, capacityAvailable: 97.04 });
    expect(radarData(r, c).values[2]).toBe(96.9);
    expect(radarText(r, c)).toContain("Free capacity 96.9%");
    expect(radarData(r).values[2]).toBe(97);
    expect(share(1, 3)).toBe(33.3);
  });
  it("keeps a bounded capacity history without duplicates", () => {
    let h = addSample([], { at: 1, used: 1, total: 4 }, 3);
    h = addSample(h, { at: 1, used: 1, total: 4 }, 3);
    expect(h).toHaveLength(1);
    for (let i = 2; i <= 5; i++) h = addSample(h, { at: i, used: i, total: 10 }, 3);
    expect(h.map((s) => s.at)).toEqual([3, 4, 5]);
  });
  it("plots used/total over time in percent", () => {
    expect(capacityPoints([])).toEqual([]);
    expect(capacityPoints([{ at: 0, used: 0, total: 4 }, { at: 10, used: 1, total: 3 }, { at: 20, used: 5, total: 4 }, { at: 30, used: 5, total: 0 }]))
      .toEqual([{ x: 0, y: 0 }, { x: 10, y: 33.33 }, { x: 20, y: 100 }]);
  });
  it("extends a shown plot in place when the refresh only adds readings", () => {
    const p = (...xs: number[]) => xs.map((x) => ({ x, y: x * 2 }));
    expect(plotUpdate([], [])).toEqual({ kind: "same" });
    expect(plotUpdate([], p(1))).toEqual({ kind: "replace" });
    expect(plotUpdate(p(1, 2), p(1, 2))).toEqual({ kind: "same" });
    expect(plotUpdate(p(1, 2), p(1, 2, 3, 4))).toEqual({ kind: "append", drop: 0, add: p(3, 4) });
    // bounded: the oldest dropped as the newest arrive
    expect(plotUpdate(p(1, 2, 3), p(2, 3, 4))).toEqual({ kind: "append", drop: 1, add: p(4) });
    expect(plotUpdate(p(1, 2, 3), p(3, 4, 5, 6))).toEqual({ kind: "append", drop: 2, add: p(4, 5, 6) });
    // the stored history arrived after this visit's readings: older points in front, redraw
    expect(plotUpdate(p(5, 6), p(1, 2, 5, 6))).toEqual({ kind: "replace" });
    // a point changed, or nothing shown is kept
    expect(plotUpdate(p(1, 2), [{ x: 1, y: 2 }, { x: 2, y: 5 }])).toEqual({ kind: "replace" });
    expect(plotUpdate(p(1, 2), p(7, 8))).toEqual({ kind: "replace" });
    expect(plotUpdate(p(1, 2), [])).toEqual({ kind: "replace" });
  });
  it("labels the time axis by the plot's span", () => {
    const t = Date.UTC(2026, 10, 24, 6, 5);
    expect(axisTime(t, 60 * 1000, "en-GB")).toMatch(/^\d\d:\d\d:\d\d$/);
    expect(axisTime(t, 3600 * 1000, "en-GB")).toMatch(/^\d\d:\d\d$/);
    expect(axisTime(t, 3 * 24 * 3600 * 1000, "en-GB")).toMatch(/Nov/);
  });
  it("reads the stored history's points, oldest first, skipping ones without a time or out of order", () => {
    const pt = (ms: number | undefined, used: bigint) =>
      create(CapacityPointSchema, { time: ms === undefined ? undefined : timestampFromMs(ms), usedBytes: used, totalBytes: 100n, availableBytes: 100n - used });
    const r = create(GetCapacityHistoryResponseSchema, { points: [pt(1000, 10n), pt(undefined, 99n), pt(2000, 20n), pt(1500, 15n), pt(3000, 30n)] });
    expect(storedSamples(r)).toEqual([
      { at: 1000, used: 10, total: 100 },
      { at: 2000, used: 20, total: 100 },
      { at: 3000, used: 30, total: 100 },
    ]);
    expect(storedSamples(undefined)).toEqual([]);
  });
  it("extends the stored history with this visit's newer readings, bounded", () => {
    const stored = [1, 2, 3].map((at) => ({ at, used: at, total: 10 }));
    const live = [2, 3, 4, 5].map((at) => ({ at, used: at * 2, total: 10 }));
    expect(mergeHistory(stored, live, 100).map((s) => [s.at, s.used])).toEqual([[1, 1], [2, 2], [3, 3], [4, 8], [5, 10]]);
    expect(mergeHistory(stored, live, 3).map((s) => s.at)).toEqual([3, 4, 5]);
    expect(mergeHistory([], live, 100)).toEqual(live); // the history not loaded (yet): the visit alone
    expect(mergeHistory(stored, [], 100)).toEqual(stored);
  });
  it("says in words what the plot shows", () => {
    const t = (ms: number) => `t${ms}`;
    expect(historySummary([], t)).toMatch(/^No reading yet/);
    // readings before stats had any capacity are not "0.0% (0 B of 0 B)"
    expect(historySummary([{ at: 1, used: 0, total: 0 }], t)).toMatch(/^No reading yet/);
    expect(historySummary([{ at: 1, used: 0, total: 0 }, { at: 2, used: 1024, total: 4096 }], t)).toBe("One reading, at t2: 25.0% (1.0 KiB of 4.0 KiB) used.");
    expect(historySummary([{ at: 1, used: 1024, total: 4096 }], t)).toBe("One reading, at t1: 25.0% (1.0 KiB of 4.0 KiB) used.");
    const h = [
      { at: 1, used: 1024, total: 4096 },
      { at: 2, used: 512, total: 4096 },
      { at: 3, used: 3072, total: 4096 },
      { at: 4, used: 2048, total: 4096 },
    ];
    expect(historySummary(h, t)).toBe(
      "4 readings from t1 to t4: 25.0% (1.0 KiB of 4.0 KiB) used at first, 50.0% (2.0 KiB of 4.0 KiB) at last; lowest 12.5%, highest 75.0% used.",
    );
  });
});
