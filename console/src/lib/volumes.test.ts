import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { WatchResponseSchema } from "../gen/lvmd/lvmd_pb";
import {
  className, deviceClasses, duplicateProblem, volumeProblem, backupProblem, resizeProblem, sizeGiB, suggestedBackup,
  backupNameProblem, backupChoiceKey, bucketOf, confirmed, initialBackupForm, loadBackupChoice, restoreProblem, saveBackupChoice, type RestoreForm,
} from "./volumes";

describe("volumes view logic", () => {
  it("lists device classes from a watch message", () => {
    const w = create(WatchResponseSchema, { freeBytes: 5n, items: [{ deviceClass: "ssd", freeBytes: 7n }, { deviceClass: "hdd", freeBytes: 9n }] });
    expect(deviceClasses(w)).toEqual([{ name: "hdd", freeBytes: 9n }, { name: "ssd", freeBytes: 7n }]);
    expect(deviceClasses(create(WatchResponseSchema, { freeBytes: 5n }))).toEqual([{ name: "", freeBytes: 5n }]);
    expect(className("")).toBe("default");
  });
  it("checks a new volume", () => {
    const gib = 1024n ** 3n;
    expect(volumeProblem("pv-1", 1, 2n * gib)).toBe("");
    expect(volumeProblem("", 1, undefined)).toMatch(/required/);
    expect(volumeProblem("-x", 1, undefined)).toMatch(/not first/);
    expect(volumeProblem("pv", 0, undefined)).toMatch(/at least 1/);
    expect(volumeProblem("pv", 3, 2n * gib)).toBe("Only 2.0 GiB is free in this device class; 3 GiB was asked. Choose a smaller size or another class.");
  });
  it("says plainly that a volume of that name exists", () => {
    const vols = [{ name: "pv-1", sizeGb: 1n }];
    expect(duplicateProblem("pv-2", 1, "", vols)).toBe("");
    expect(duplicateProblem("pv-1", 1, "", vols)).toBe("A volume named pv-1 already exists in class default (1 GiB): nothing was created.");
    expect(duplicateProblem("pv-1", 3, "ssd", vols)).toBe("A volume named pv-1 already exists in class ssd with 1 GiB (3 GiB asked): choose another name, or remove it first.");
  });
});

describe("resizeProblem", () => {
  const g = 1024n ** 3n;
  it("lets a volume grow in whole GiB within the free space", () => {
    expect(resizeProblem(2, g, 4n * g)).toBe("");
    expect(resizeProblem(2, g, undefined)).toBe("");
  });
  it("refuses shrinking, the same size and fractions, naming the current size", () => {
    expect(resizeProblem(1, g, undefined)).toMatch(/already has 1\.0 GiB; a volume only grows: choose more than 1 GiB/);
    expect(resizeProblem(1.5, g, undefined)).toMatch(/whole number of GiB/);
    expect(resizeProblem(0, g, undefined)).toMatch(/at least 1/);
  });
  it("says in numbers when the growth does not fit", () => {
    expect(resizeProblem(10, g, 2n * g)).toBe("Growing to 10 GiB needs 9.0 GiB more; only 2.0 GiB is free in this device class.");
  });
  it("rounds a size of partial extents up to whole GiB", () => {
    expect(sizeGiB(g + 1n)).toBe(2n);
    expect(sizeGiB(g)).toBe(1n);
  });
});

describe("backup form", () => {
  const form = { name: "b1", path: "bucket/vol/1", endpoint: "", accessKeyId: "", secretAccessKey: "", encryptionKey: "" };
  it("suggests a name and path from the volume and the time (UTC)", () => {
    expect(suggestedBackup("pvc-1", new Date("2026-11-28T21:05:09Z"), "plinth-lvmd")).toEqual({ name: "backup-pvc-1-20261128210509", path: "plinth-lvmd/backups/pvc-1/20261128210509" });
    // Without a known bucket the path is left for the user (no made-up bucket).
    expect(suggestedBackup("pvc-1", new Date("2026-11-28T21:05:09Z"), "").path).toBe("");
  });
  it("takes the agent's store when endpoint and keys are all empty", () => {
    expect(backupProblem(form, true)).toEqual({ field: "", text: "" });
    expect(backupProblem(form, false).field).toBe("endpoint");
  });
  it("puts each problem on its field", () => {
    expect(backupProblem({ ...form, name: " " }, true).field).toBe("name");
    expect(backupProblem({ ...form, path: "bucket" }, true).field).toBe("path");
    expect(backupProblem({ ...form, path: "bucket/" }, true).field).toBe("path");
    expect(backupProblem({ ...form, endpoint: "s3.example.com" }, true).field).toBe("endpoint");
    expect(backupProblem({ ...form, endpoint: "https://s3.example.com" }, true).field).toBe("accessKeyId");
    expect(backupProblem({ ...form, endpoint: "https://s3.example.com", accessKeyId: "k" }, true).field).toBe("secretAccessKey");
    expect(backupProblem({ ...form, endpoint: "https://s3.example.com", accessKeyId: "k", secretAccessKey: "s" }, false)).toEqual({ field: "", text: "" });
  });
  it("checks a backup name as lvmd-agent does", () => {
    expect(backupNameProblem("backup-pvc-1-20261128210509")).toBe("");
    expect(backupNameProblem("a.b+c_d")).toBe("");
    for (const bad of ["Bad Name!/..", "..", ".x", "-x", "a/b", "a b", "x".repeat(256)]) expect(backupNameProblem(bad)).toMatch(/may hold letters/);
    expect(backupNameProblem("")).toMatch(/needs a name/);
  });
  it("keeps the last store without secrets, and starts from it", () => {
    const mem = new Map<string, string>();
    const storage = { getItem: (k: string) => mem.get(k) ?? null, setItem: (k: string, v: string) => void mem.set(k, v) };
    expect(loadBackupChoice(storage)).toBeNull();
    const now = new Date("2026-12-06T07:00:00Z");
    expect(initialBackupForm("v1", now, "plinth-lvmd", null)).toEqual({
      name: "backup-v1-20261206070000", path: "plinth-lvmd/backups/v1/20261206070000", endpoint: "", accessKeyId: "", secretAccessKey: "", encryptionKey: "",
    });
    saveBackupChoice(storage, { name: "n", path: "s3://mine/x/y", endpoint: "https://s3.example.com", accessKeyId: "AK", secretAccessKey: "SECRET", encryptionKey: "KEY" });
    expect(mem.get(backupChoiceKey)).not.toMatch(/SECRET|KEY"/);
    const last = loadBackupChoice(storage);
    expect(last).toEqual({ bucket: "mine", endpoint: "https://s3.example.com", accessKeyId: "AK" });
    expect(initialBackupForm("v1", now, "plinth-lvmd", last).path).toBe("mine/backups/v1/20261206070000");
    // The agent's store: only the bucket is kept.
    saveBackupChoice(storage, { name: "n", path: "plinth-lvmd/a", endpoint: "", accessKeyId: "", secretAccessKey: "", encryptionKey: "" });
    expect(loadBackupChoice(storage)).toEqual({ bucket: "plinth-lvmd", endpoint: "", accessKeyId: "" });
    mem.set(backupChoiceKey, "{not json");
    expect(loadBackupChoice(storage)).toBeNull();
  });
  it("checks a restore before lvmd-agent is asked", () => {
    const gib = 1024n ** 3n;
    const f: RestoreForm = { name: "v1-copy", deviceClass: "", sizeGb: 2, accessKeyId: "", secretAccessKey: "", encryptionKey: "" };
    expect(restoreProblem(f, 2n * gib, false, false)).toEqual({ field: "", text: "" });
    expect(restoreProblem({ ...f, name: "bad name" }, 2n * gib, false, false).field).toBe("name");
    expect(restoreProblem({ ...f, sizeGb: 1 }, 2n * gib, false, false)).toEqual({ field: "sizeGb", text: "The backup holds 2.0 GiB: the new volume needs at least 2 GiB." });
    expect(restoreProblem(f, 2n * gib, true, false).field).toBe("accessKeyId");
    expect(restoreProblem({ ...f, accessKeyId: "a" }, 2n * gib, true, false).field).toBe("secretAccessKey");
    expect(restoreProblem(f, 2n * gib, false, true).field).toBe("encryptionKey");
  });
  it("reads a path's bucket", () => {
    expect(bucketOf("plinth-lvmd/backups/v1/x")).toBe("plinth-lvmd");
    expect(bucketOf("s3://b/x")).toBe("b");
    expect(bucketOf("")).toBe("");
  });
  it("confirms a destructive action only with the exact name", () => {
    expect(confirmed("vol1", "vol1")).toBe(true);
    expect(confirmed(" vol1 ", "vol1")).toBe(true);
    expect(confirmed("vol", "vol1")).toBe(false);
    expect(confirmed("", "")).toBe(false);
  });
});
