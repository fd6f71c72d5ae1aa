import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { BackupStatus, BaseBackupSchema, RecoveryWindowSchema, ServerSchema, WALArchiveSchema } from "../gen/plinth/cnpgi/v1/catalog_pb";
import { archiveHealth, backupStatus, backupWAL, lastArchive, newestFirst, recoveryWindow, serverKey, walRange } from "./backups";

const now = Date.UTC(2026, 10, 24, 6, 0, 0);
const min = 60_000;

describe("backups view logic", () => {
  it("keys servers by store and name", () => {
    expect(serverKey({ objectStore: "local", serverName: "pg" })).toBe("local/pg");
  });
  it("words backup statuses", () => {
    expect(backupStatus(BackupStatus.DONE)).toEqual({ level: "ok", text: "Completed" });
    expect(backupStatus(BackupStatus.FAILED).level).toBe("err");
    expect(backupStatus(BackupStatus.STARTED).level).toBe("warn");
    expect(backupStatus(BackupStatus.UNSPECIFIED).level).toBe("unknown");
  });
  it("shows the archived WAL range", () => {
    expect(walRange(undefined)).toBe("No WAL archived yet.");
    expect(walRange(create(WALArchiveSchema, {}))).toBe("No WAL archived yet.");
    expect(walRange(create(WALArchiveSchema, { firstWal: "000000010000000000000001", lastWal: "000000010000000000000001", segments: 1n, storedBytes: 2048n })))
      .toBe("000000010000000000000001 (1 segment, 2.0 KiB stored)");
    expect(walRange(create(WALArchiveSchema, { firstWal: "000000010000000000000001", lastWal: "000000010000000000000003", segments: 3n, storedBytes: 100n })))
      .toBe("000000010000000000000001 – 000000010000000000000003 (3 segments, 100 B stored)");
  });
  it("says when the last archive was", () => {
    expect(lastArchive(undefined, now)).toBe("Never");
    expect(lastArchive(create(WALArchiveSchema, { lastArchivedTime: timestampFromMs(now - 5 * min) }), now)).toMatch(/\(5 min ago\)$/);
  });
  it("tells failing archiving from a failure that was overcome", () => {
    const failing = create(WALArchiveSchema, {
      lastArchivedTime: timestampFromMs(now - 10 * min), failedArchives: 2n,
      lastFailedArchiveTime: timestampFromMs(now - 2 * min), lastFailedArchiveMessage: "the object store is unreachable; retry later",
    });
    expect(archiveHealth(failing, now)).toEqual({ level: "err", text: "Archiving fails", detail: "The last archive call failed 2 min ago: the object store is unreachable; retry later" });
    const never = create(WALArchiveSchema, { failedArchives: 1n, lastFailedArchiveTime: timestampFromMs(now - min) });
    expect(archiveHealth(never, now).level).toBe("err");
    expect(archiveHealth(never, now).detail).toMatch(/no reason given/);
    const recovered = create(WALArchiveSchema, { ...failing, lastArchivedTime: timestampFromMs(now - min) });
    expect(archiveHealth(recovered, now)).toMatchObject({ level: "ok", detail: "2 failed archive calls since the plugin started; archiving has succeeded since." });
    expect(archiveHealth(create(WALArchiveSchema, { lastArchivedTime: timestampFromMs(now) }), now)).toEqual({ level: "ok", text: "Archiving", detail: "" });
    expect(archiveHealth(undefined, now).level).toBe("unknown");
  });
  it("shows the recovery window or why there is none", () => {
    expect(recoveryWindow(create(ServerSchema, {}))).toMatch(/^None: no completed base backup/);
    const s = create(ServerSchema, { recoveryWindow: create(RecoveryWindowSchema, {
      startTime: timestampFromMs(now - 60 * min), endTime: timestampFromMs(now), endWal: "000000010000000000000004" }) });
    expect(recoveryWindow(s)).toBe(`${new Date(now - 60 * min).toLocaleString()} to ${new Date(now).toLocaleString()} (WAL up to 000000010000000000000004)`);
  });
  it("orders backups newest first and shows their WAL", () => {
    const a = create(BaseBackupSchema, { backupId: "20261124T050000", startTime: timestampFromMs(now - 60 * min), beginWal: "000000010000000000000002", endWal: "000000010000000000000002" });
    const b = create(BaseBackupSchema, { backupId: "20261124T055000", startTime: timestampFromMs(now - 10 * min), beginWal: "000000010000000000000004", endWal: "000000010000000000000005" });
    expect(newestFirst([a, b]).map((x) => x.backupId)).toEqual(["20261124T055000", "20261124T050000"]);
    expect(backupWAL(a)).toBe("000000010000000000000002");
    expect(backupWAL(b)).toBe("000000010000000000000004 – 000000010000000000000005");
    expect(backupWAL(create(BaseBackupSchema, {}))).toBe("—");
  });
});
