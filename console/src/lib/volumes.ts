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
