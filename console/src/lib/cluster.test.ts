import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  ClusterSource, CrashSchema, GetClusterDetailResponseSchema, HealthCheckSchema, PoolSchema,
} from "../gen/plinth/stats/v1/cluster_pb";
import { checkText, clusterLine, crashText, healthReason, orderChecks, osdState, poolCopies, poolData, poolPGs, severity } from "./cluster";

const check = (code: string, sev: string, summary = "", muted = false) => create(HealthCheckSchema, { code, severity: sev, summary, muted });

describe("storage detail logic", () => {
  it("reads a check's severity", () => {
    expect(severity("HEALTH_ERR")).toEqual({ level: "err", text: "Error" });
    expect(severity("HEALTH_WARN")).toEqual({ level: "warn", text: "Warning" });
    expect(severity("")).toEqual({ level: "unknown", text: "Unknown" });
  });
  it("says why the health is what it is", () => {
    expect(healthReason(undefined)).toBe("");
    expect(healthReason(create(GetClusterDetailResponseSchema, { health: "HEALTH_OK" }))).toBe("HEALTH_OK: no health check is active.");
    expect(healthReason(create(GetClusterDetailResponseSchema, { health: "HEALTH_OK", checks: [check("X", "HEALTH_WARN", "", true)] })))
      .toBe("HEALTH_OK: only muted checks are active (1 muted).");
    const warn = create(GetClusterDetailResponseSchema, {
      health: "HEALTH_ERR",
      checks: [check("RECENT_CRASH", "HEALTH_WARN", "1 daemons have recently crashed"), check("MUTED_ONE", "HEALTH_ERR", "", true), check("OSD_FULL", "HEALTH_ERR", "1 full osd(s)")],
    });
    expect(healthReason(warn)).toBe("HEALTH_ERR because of 3 health checks (1 muted): OSD_FULL, RECENT_CRASH, MUTED_ONE.");
    expect(orderChecks(warn.checks).map((c) => c.code)).toEqual(["OSD_FULL", "RECENT_CRASH", "MUTED_ONE"]);
    expect(healthReason(create(GetClusterDetailResponseSchema, { health: "HEALTH_WARN" }))).toBe("HEALTH_WARN: the source names no check for it.");
    expect(checkText(check("OSDMAP_FLAGS", "HEALTH_WARN"))).toBe("OSDMAP_FLAGS");
    expect(checkText(check("OSDMAP_FLAGS", "HEALTH_WARN", "noout flag(s) set"))).toBe("noout flag(s) set");
  });
  it("names the cluster or says why it cannot", () => {
    expect(clusterLine(create(GetClusterDetailResponseSchema, { fsid: "f-1", source: ClusterSource.CEPH_DASHBOARD }), "")).toBe("Ceph cluster f-1");
    expect(clusterLine(undefined, "f-2")).toBe("Ceph cluster f-2");
    expect(clusterLine(create(GetClusterDetailResponseSchema, { fsid: "f-3", source: ClusterSource.ROOK }), "")).toBe("Ceph cluster f-3 (as Rook reports it)");
    expect(clusterLine(create(GetClusterDetailResponseSchema, { source: ClusterSource.INVENTORY }), "")).toMatch(/^No Ceph cluster is connected/);
    expect(clusterLine(create(GetClusterDetailResponseSchema, { source: ClusterSource.CEPH_PROMETHEUS }), "")).toMatch(/prometheus module/);
    expect(clusterLine(undefined, "")).toBe("Stats has not named the cluster yet.");
    for (const s of [ClusterSource.UNSPECIFIED, ClusterSource.ROOK]) expect(clusterLine(create(GetClusterDetailResponseSchema, { source: s }), "")).not.toContain("—");
  });
  it("says a daemon's crashes in words", () => {
    const now = Date.UTC(2026, 10, 24, 12, 0, 0);
    const once = create(CrashSchema, { daemon: "osd.0", count: 1, lastTime: timestampFromMs(now - 5 * 60_000) });
    expect(crashText(once, now)).toMatch(/^once, 5 min ago \(/);
    const thrice = create(CrashSchema, { daemon: "mgr.x", count: 3, lastTime: timestampFromMs(now - 2 * 3600_000) });
    expect(crashText(thrice, now)).toMatch(/^3 times, last 2 h ago \(/);
    expect(crashText(create(CrashSchema, { daemon: "osd.3", count: 1 }), now)).toBe("once, at an unknown time");
  });
  it("says a pool's copies, PGs and data", () => {
    const p = create(PoolSchema, { name: "rbd", size: 3, minSize: 2, pgs: 32, activeCleanPgs: 31, storedBytes: 20n * 1024n * 1024n, objects: 236n });
    expect(poolCopies(p)).toBe("3 copies, 2 needed");
    expect(poolCopies(create(PoolSchema, { size: 1 }))).toBe("1 copy");
    expect(poolCopies(create(PoolSchema, {}))).toBe("unknown");
    expect(poolPGs(p)).toBe("31 of 32 active+clean");
    expect(poolData(p)).toBe("20 MiB in 236 objects");
    expect(poolData(create(PoolSchema, { objects: 1n }))).toBe("0 B in 1 object");
  });
  it("says an OSD's state", () => {
    expect(osdState({ up: true, in: true })).toEqual({ level: "ok", text: "up, in" });
    expect(osdState({ up: false, in: true })).toEqual({ level: "warn", text: "down, in" });
    expect(osdState({ up: false, in: false })).toEqual({ level: "err", text: "down, out" });
  });
});
