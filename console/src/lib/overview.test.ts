import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { ClusterItemSchema, ClusterStatus } from "../gen/cnct/kaas/api/api_pb";
import { JobKind, JobSchema, JobState } from "../gen/plinth/lvmd/v1/jobs_pb";
import { ServerSchema, WALArchiveSchema } from "../gen/plinth/cnpgi/v1/catalog_pb";
import { RunnerSchema } from "../gen/plinth/vagrant/v1/runners_pb";
import { HealthCheckSchema } from "../gen/plinth/stats/v1/cluster_pb";
import { capacity } from "./stats";
import { archivingCard, clustersCard, runnersCard, storageCard, volumeJobsCard, worst } from "./overview";

const now = Date.UTC(2026, 11, 6, 12);

describe("overview cards", () => {
  it("takes the worst level", () => {
    expect(worst(["ok", "warn", "err"])).toBe("err");
    expect(worst(["ok", "unknown"])).toBe("ok");
    expect(worst([])).toBe("unknown");
  });
  it("storage: the health, capacity, and the active checks worst first, muted ones left out", () => {
    const c = storageCard("HEALTH_WARN", capacity({ used: 50n, available: 50n, total: 100n }), [
      create(HealthCheckSchema, { code: "POOL_NO_REDUNDANCY", severity: "HEALTH_WARN", summary: "1 pool(s) have no replicas configured" }),
      create(HealthCheckSchema, { code: "MUTED", severity: "HEALTH_WARN", summary: "muted", muted: true }),
      create(HealthCheckSchema, { code: "OSD_DOWN", severity: "HEALTH_ERR", summary: "1 osds down" }),
    ]);
    expect(c.level).toBe("warn");
    expect(c.state).toBe("Warning");
    expect(c.items.map((i) => [i.level, i.text, i.to])).toEqual([["err", "1 osds down", "/storage"], ["warn", "1 pool(s) have no replicas configured", "/storage"]]);
  });
  it("clusters: each one not running, linked to its page", () => {
    const c = clustersCard([
      create(ClusterItemSchema, { name: "a", status: ClusterStatus.RUNNING }),
      create(ClusterItemSchema, { name: "b c", status: ClusterStatus.ERROR }),
      create(ClusterItemSchema, { name: "d", status: ClusterStatus.PROVISIONING }),
    ]);
    expect(c).toMatchObject({ level: "err", state: "2 not running", summary: "3 clusters, 1 running." });
    expect(c.items).toEqual([{ level: "err", text: "b c: Error", to: "/clusters/b%20c" }, { level: "warn", text: "d: Provisioning", to: "/clusters/d" }]);
    expect(clustersCard([])).toMatchObject({ level: "ok", state: "No clusters", items: [] });
    expect(clustersCard([create(ClusterItemSchema, { name: "a", status: ClusterStatus.RUNNING })])).toMatchObject({ level: "ok", state: "All running" });
  });
  it("volumes: failed and interrupted jobs link to their volume; running ones are counted", () => {
    const c = volumeJobsCard([
      create(JobSchema, { kind: JobKind.BACKUP, name: "nightly", volumeHandle: "pvc-1", state: JobState.ERROR }),
      create(JobSchema, { kind: JobKind.RESTORE, name: "back", volumeHandle: "pvc-2", state: JobState.ERROR, retryable: true }),
      create(JobSchema, { kind: JobKind.BACKUP, name: "now", volumeHandle: "pvc-3", state: JobState.IN_PROGRESS }),
      create(JobSchema, { kind: JobKind.BACKUP, name: "done", volumeHandle: "pvc-3", state: JobState.COMPLETE }),
    ]);
    expect(c).toMatchObject({ level: "err", state: "2 jobs failed", summary: "4 recent backups and restores, 1 running now." });
    expect(c.items.map((i) => [i.text, i.to])).toEqual([["Backup nightly of pvc-1 failed", "/volumes/pvc-1"], ["Restore back of pvc-2 was interrupted", "/volumes/pvc-2"]]);
    expect(volumeJobsCard([])).toMatchObject({ level: "ok", state: "No failed job", items: [] });
  });
  it("archiving: the servers whose last archive call failed, linked to their page", () => {
    const failing = create(ServerSchema, { serverName: "pg", objectStore: "s3", wal: create(WALArchiveSchema, {
      lastArchivedTime: timestampFromMs(now - 120_000), lastFailedArchiveTime: timestampFromMs(now - 60_000), lastFailedArchiveMessage: "bucket gone" }) });
    const fine = create(ServerSchema, { serverName: "ok", objectStore: "s3", wal: create(WALArchiveSchema, { lastArchivedTime: timestampFromMs(now - 1000) }) });
    const c = archivingCard([failing, fine], now);
    expect(c).toMatchObject({ level: "err", state: "1 server failing", summary: "2 PostgreSQL servers in the catalog." });
    expect(c.items).toHaveLength(1);
    expect(c.items[0].to).toBe("/backups/pg");
    expect(c.items[0].text).toContain("bucket gone");
    expect(archivingCard([fine], now)).toMatchObject({ level: "ok", state: "Archiving", items: [] });
    expect(archivingCard([], now)).toMatchObject({ level: "unknown", state: "No server yet" });
  });
  it("runners: offline ones, and none at all is an error", () => {
    const c = runnersCard([create(RunnerSchema, { id: "01HONLINE", online: true }), create(RunnerSchema, { id: "01HOFFLINE0000", online: false })], now);
    expect(c).toMatchObject({ level: "warn", state: "1 online", summary: "2 runners registered, 1 online." });
    expect(c.items[0]).toMatchObject({ level: "warn", text: "Runner 01HOFFLINE00: Offline", to: "/vagrant" });
    expect(runnersCard([], now)).toMatchObject({ level: "err", state: "No runner" });
    expect(runnersCard([create(RunnerSchema, { id: "x", online: false })], now)).toMatchObject({ level: "err", state: "All offline" });
  });
});
