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

/** A backup name and path for volume at time now: backup-<volume>-<UTC yyyymmddhhmmss>. */
export function suggestedBackup(volume: string, now: Date): { name: string; path: string } {
  const stamp = now.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  const name = `backup-${volume}-${stamp}`.slice(0, 253);
  return { name, path: `backups/${volume}/${stamp}` };
}

/**
 * The problem with a backup form ("" when lvmd-agent may be asked), on the field it concerns.
 * hasDefault: the agent has a default store, so endpoint and keys may all be left empty.
 */
export function backupProblem(f: BackupForm, hasDefault: boolean): { field: keyof BackupForm | ""; text: string } {
  if (!f.name.trim()) return { field: "name", text: "The backup needs a name." };
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
