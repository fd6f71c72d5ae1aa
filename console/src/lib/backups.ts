// View logic of the Backups page (cnpgi-plugin's catalog): each server's archived WAL, its
// last archive and failure, base backups and the recovery window, in words.
import { BackupStatus, type BaseBackup, type Server, type WALArchive } from "../gen/plinth/cnpgi/v1/catalog_pb";
import { ago, formatBytes, timestampMs, when } from "./format";

/** A status badge: its level (a CSS class) and text. */
export interface Badge {
  level: "ok" | "warn" | "err" | "unknown";
  text: string;
}

/** A server's identity on the page and in the catalog: store and server name. */
export function serverKey(s: Pick<Server, "objectStore" | "serverName">): string {
  return `${s.objectStore}/${s.serverName}`;
}

/** A base backup's status in words. */
export function backupStatus(s: BackupStatus): Badge {
  switch (s) {
    case BackupStatus.DONE:
      return { level: "ok", text: "Completed" };
    case BackupStatus.STARTED:
      return { level: "warn", text: "Running or interrupted" };
    case BackupStatus.FAILED:
      return { level: "err", text: "Failed" };
    default:
      return { level: "unknown", text: "Not usable" };
  }
}

/** The archived WAL range: "first – last (n segments)". */
export function walRange(w: WALArchive | undefined): string {
  if (!w || !w.lastWal) return "No WAL archived yet.";
  const n = Number(w.segments);
  const count = `${n} segment${n === 1 ? "" : "s"}, ${formatBytes(w.storedBytes)} stored`;
  return w.firstWal === w.lastWal ? `${w.lastWal} (${count})` : `${w.firstWal} – ${w.lastWal} (${count})`;
}

/** When the newest WAL file was archived, with how long ago. */
export function lastArchive(w: WALArchive | undefined, now: number): string {
  const ms = timestampMs(w?.lastArchivedTime);
  return ms ? `${when(ms)} (${ago(ms, now)})` : "Never";
}

/**
 * How archiving goes: failing when the newest archive call failed after the newest archived
 * file (what the failure said), else fine; a failure followed by a success is only noted.
 */
export function archiveHealth(w: WALArchive | undefined, now: number): Badge & { detail: string } {
  const last = timestampMs(w?.lastArchivedTime);
  const failed = timestampMs(w?.lastFailedArchiveTime);
  const n = Number(w?.failedArchives ?? 0n);
  if (failed && failed >= last) {
    return { level: "err", text: "Archiving fails", detail: `The last archive call failed ${ago(failed, now)}: ${w?.lastFailedArchiveMessage || "no reason given"}` };
  }
  if (!last) return { level: "unknown", text: "Nothing archived", detail: "" };
  const detail = n > 0 ? `${n} failed archive call${n === 1 ? "" : "s"} since the plugin started; archiving has succeeded since.` : "";
  return { level: "ok", text: "Archiving", detail };
}

/**
 * The recovery window: from the first recoverability point (the end of the oldest completed
 * base backup) to the newest archived WAL.
 */
export function recoveryWindow(s: Server): string {
  const w = s.recoveryWindow;
  const from = timestampMs(w?.startTime);
  if (!w || !from) return "None: no completed base backup yet, so the archive cannot be recovered from.";
  const to = timestampMs(w.endTime);
  return `${when(from)} to ${to ? when(to) : "the end of the backup"}${w.endWal ? ` (WAL up to ${w.endWal})` : ""}`;
}

/** Base backups, newest first (the catalog answers oldest first). */
export function newestFirst(backups: BaseBackup[]): BaseBackup[] {
  return [...backups].sort((a, b) => timestampMs(b.startTime) - timestampMs(a.startTime) || b.backupId.localeCompare(a.backupId));
}

/** A base backup's WAL span: "begin – end", or "—". */
export function backupWAL(b: BaseBackup): string {
  if (!b.beginWal) return "—";
  return b.endWal && b.endWal !== b.beginWal ? `${b.beginWal} – ${b.endWal}` : b.beginWal;
}
