import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { WatchResponseSchema } from "../gen/lvmd/lvmd_pb";
import { className, deviceClasses, duplicateProblem, volumeProblem } from "./volumes";

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
