// View logic of the Volumes page: device classes from lvmd's capacity watch, and the
// create-volume form checked before the round trip.
import type { WatchResponse } from "../gen/lvmd/lvmd_pb";

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
  if (free !== undefined && BigInt(sizeGb) * 1024n ** 3n > free) return "The device class has not that much free space.";
  return "";
}
