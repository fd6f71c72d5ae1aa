// View logic of the Volumes page: device classes from lvmd's capacity watch, and the
// create-volume form checked before the round trip.
import type { WatchResponse } from "../gen/lvmd/lvmd_pb";
import { formatBytes } from "./format";

/** A device class and its free space. */
export interface DeviceClass {
  name: string;
  freeBytes: bigint;
}

/**
 * The device classes a Watch message reports, by name. The agent reports every configured
 * class in items; an agent that sends none has only its default class (free_bytes).
 */
export function deviceClasses(w: WatchResponse): DeviceClass[] {
  if (w.items.length === 0) return [{ name: "", freeBytes: w.freeBytes }];
  return [...w.items]
    .map((i) => ({ name: i.deviceClass, freeBytes: i.freeBytes }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** A device class's name for people ("" is the agent's default class). */
export function className(name: string): string {
  return name || "default";
}

/** The problem with a new volume ("" when lvmd-agent may be asked). */
export function volumeProblem(name: string, sizeGb: number, free: bigint | undefined): string {
  if (!name) return "The volume name is required.";
  if (name.length > 127 || !/^[a-zA-Z0-9+_.][a-zA-Z0-9+_.-]*$/.test(name)) {
    return "The volume name may hold letters, digits, '+', '_', '.' and '-' (not first), at most 127 characters.";
  }
  if (!Number.isInteger(sizeGb) || sizeGb < 1) return "The size is a whole number of GiB, at least 1.";
  if (free !== undefined && BigInt(sizeGb) * 1024n ** 3n > free) {
    return `Only ${formatBytes(free)} is free in this device class; ${sizeGb} GiB was asked. Choose a smaller size or another class.`;
  }
  return "";
}

/**
 * The problem with creating volume name when the class already holds volumes: lvmd-agent's
 * CreateLV answers an existing volume of the same size as if it had made it (TopoLVM's
 * idempotence), and refuses another size in bytes; the console says either plainly.
 */
export function duplicateProblem(name: string, sizeGb: number, dc: string, existing: { name: string; sizeGb: bigint }[]): string {
  const v = existing.find((e) => e.name === name);
  if (!v) return "";
  if (v.sizeGb === BigInt(sizeGb)) return `A volume named ${name} already exists in class ${className(dc)} (${v.sizeGb} GiB): nothing was created.`;
  return `A volume named ${name} already exists in class ${className(dc)} with ${v.sizeGb} GiB (${sizeGb} GiB asked): choose another name, or remove it first.`;
}

const gib = 1024n ** 3n;

/** The size a volume of sizeBytes is shown as, in whole GiB (lvm's extents may round up). */
export function sizeGiB(sizeBytes: bigint): bigint {
  return (sizeBytes + gib - 1n) / gib;
}

/**
 * The problem with growing a volume of currentBytes to newGb GiB ("" when lvmd-agent may be
 * asked): volumes only grow (lvmd-agent refuses less), in whole GiB, within the class's free
 * space (free undefined: not known yet, lvmd-agent checks).
 */
export function resizeProblem(newGb: number, currentBytes: bigint, free: bigint | undefined): string {
  if (!Number.isInteger(newGb) || newGb < 1) return "The new size is a whole number of GiB, at least 1.";
  const want = BigInt(newGb) * gib;
  if (want <= currentBytes) {
    return `The volume already has ${formatBytes(currentBytes)}; a volume only grows: choose more than ${sizeGiB(currentBytes)} GiB.`;
  }
  if (free !== undefined && want - currentBytes > free) {
    return `Growing to ${newGb} GiB needs ${formatBytes(want - currentBytes)} more; only ${formatBytes(free)} is free in this device class.`;
  }
  return "";
}

/** What the backup form holds. */
export interface BackupForm {
  name: string;
  /** bucket/prefix in the store. */
  path: string;
  /** Empty: the agent's default store (when it has one). */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  encryptionKey: string;
}

/**
 * A backup name and path for volume at time now: backup-<volume>-<UTC yyyymmddhhmmss>, at
 * <bucket>/backups/<volume>/<stamp> ("" without a bucket: the form asks for one).
 */
export function suggestedBackup(volume: string, now: Date, bucket: string): { name: string; path: string } {
  const stamp = now.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  const name = `backup-${volume}-${stamp}`.slice(0, 255);
  return { name, path: bucket ? `${bucket}/backups/${volume}/${stamp}` : "" };
}

/** The problem with a backup name ("" when lvmd-agent takes it): its rule, said before it is asked. */
export function backupNameProblem(name: string): string {
  if (!name) return "The backup needs a name.";
  if (name.length > 255 || !/^[A-Za-z0-9_+][A-Za-z0-9_+.-]*$/.test(name)) {
    return "A backup name may hold letters, digits, '-', '_', '.' and '+' (a letter, digit, '_' or '+' first), at most 255 characters.";
  }
  return "";
}

/** Where the user last backed up to (kept in localStorage; never a secret). */
export interface BackupChoice {
  /** The bucket: the path's first segment. */
  bucket: string;
  /** "" for the agent's default store. */
  endpoint: string;
  accessKeyId: string;
}

/** The localStorage key of the last backup choice. */
export const backupChoiceKey = "plinth.volumes.backup-store";

/** The last choice kept in storage, or null when there is none (or it is not one). */
export function loadBackupChoice(storage: Pick<Storage, "getItem">): BackupChoice | null {
  try {
    const v = JSON.parse(storage.getItem(backupChoiceKey) ?? "null") as Partial<BackupChoice> | null;
    if (!v || typeof v.bucket !== "string" || typeof v.endpoint !== "string" || typeof v.accessKeyId !== "string") return null;
    return { bucket: v.bucket, endpoint: v.endpoint, accessKeyId: v.accessKeyId };
  } catch {
    return null;
  }
}

/** The bucket a backup path names: its first segment ("" for none). */
export function bucketOf(path: string): string {
  return path.replace(/^s3:\/\//, "").split("/")[0] ?? "";
}

/** Keeps a sent form's store (bucket, endpoint, access key id — no secret) as the next default. */
export function saveBackupChoice(storage: Pick<Storage, "setItem">, f: BackupForm): void {
  const c: BackupChoice = { bucket: bucketOf(f.path), endpoint: f.endpoint, accessKeyId: f.endpoint ? f.accessKeyId : "" };
  storage.setItem(backupChoiceKey, JSON.stringify(c));
}

/** The form a volume's backup starts with: the last choice, else the agent's default store. */
export function initialBackupForm(volume: string, now: Date, defaultBucket: string, last: BackupChoice | null): BackupForm {
  const store = last ?? { bucket: defaultBucket, endpoint: "", accessKeyId: "" };
  return { ...suggestedBackup(volume, now, store.bucket), endpoint: store.endpoint, accessKeyId: store.accessKeyId, secretAccessKey: "", encryptionKey: "" };
}

/** What the restore form holds. */
export interface RestoreForm {
  name: string;
  deviceClass: string;
  sizeGb: number;
  accessKeyId: string;
  secretAccessKey: string;
  encryptionKey: string;
}

/**
 * The problem with restoring a backup of backupBytes into a new volume ("" when lvmd-agent may
 * be asked), on the field it concerns. needsKeys: the backup is not in the agent's default
 * store; encrypted: it needs its key.
 */
export function restoreProblem(f: RestoreForm, backupBytes: bigint, needsKeys: boolean, encrypted: boolean): { field: keyof RestoreForm | ""; text: string } {
  const name = volumeProblem(f.name, Math.max(1, f.sizeGb), undefined);
  if (name) return { field: "name", text: name };
  if (!Number.isInteger(f.sizeGb) || BigInt(f.sizeGb) * gib < backupBytes) {
    return { field: "sizeGb", text: `The backup holds ${formatBytes(backupBytes)}: the new volume needs at least ${sizeGiB(backupBytes)} GiB.` };
  }
  if (needsKeys && (!f.accessKeyId || !f.secretAccessKey)) {
    return { field: f.accessKeyId ? "secretAccessKey" : "accessKeyId", text: "This backup is not in the agent's store: give that store's access key id and secret." };
  }
  if (encrypted && !f.encryptionKey) return { field: "encryptionKey", text: "This backup is encrypted: give the key it was made with." };
  return { field: "", text: "" };
}

/** Whether a typed confirmation names the object exactly (destructive actions ask for it). */
export function confirmed(typed: string, name: string): boolean {
  return typed.trim() === name && name !== "";
}

/**
 * The problem with a backup form ("" when lvmd-agent may be asked), on the field it concerns.
 * hasDefault: the agent has a default store, so endpoint and keys may all be left empty.
 */
export function backupProblem(f: BackupForm, hasDefault: boolean): { field: keyof BackupForm | ""; text: string } {
  const nameProblem = backupNameProblem(f.name.trim());
  if (nameProblem) return { field: "name", text: nameProblem };
  const slash = f.path.replace(/^s3:\/\//, "").indexOf("/");
  if (slash <= 0 || slash === f.path.replace(/^s3:\/\//, "").length - 1) {
    return { field: "path", text: "The location is a bucket and a path in it: bucket/path/to/backup." };
  }
  const anyStore = f.endpoint || f.accessKeyId || f.secretAccessKey;
  if (!anyStore && hasDefault) return { field: "", text: "" };
  if (!/^https?:\/\/[^/@?#]+/.test(f.endpoint)) {
    return { field: "endpoint", text: hasDefault
      ? "Name the S3 endpoint (http:// or https://) with its keys, or leave all three empty for the agent's store."
      : "This agent has no default store: name the S3 endpoint (http:// or https://)." };
  }
  if (!f.accessKeyId) return { field: "accessKeyId", text: "The access key id of that endpoint is required." };
  if (!f.secretAccessKey) return { field: "secretAccessKey", text: "The secret access key of that endpoint is required." };
  return { field: "", text: "" };
}
