import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { WatchResponseSchema } from "../gen/lvmd/lvmd_pb";
import { className, deviceClasses, duplicateProblem, volumeProblem, backupProblem, resizeProblem, sizeGiB, suggestedBackup } from "./volumes";

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
    expect(suggestedBackup("pvc-1", new Date("2026-11-28T21:05:09Z"))).toEqual({ name: "backup-pvc-1-20261128210509", path: "backups/pvc-1/20261128210509" });
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
});
