import { describe, expect, it } from "vitest";
import { ago, formatBytes, percent, timestampMs } from "./format";

describe("format", () => {
  it("formats bytes", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(10n * 1024n ** 3n)).toBe("10 GiB");
    expect(formatBytes(-1)).toBe("—");
  });
  it("computes a bounded percentage", () => {
    expect(percent(1, 4)).toBe(25);
    expect(percent(5, 4)).toBe(100);
    expect(percent(1, 0)).toBe(0);
    expect(percent(1n, 2n)).toBe(50);
  });
  it("reads timestamps", () => {
    expect(timestampMs(undefined)).toBe(0);
    expect(timestampMs({ seconds: 2n, nanos: 5_000_000 } as never)).toBe(2005);
  });
  it("says how long ago", () => {
    const now = 1_000_000_000;
    expect(ago(0, now)).toBe("—");
    expect(ago(now - 3000, now)).toBe("just now");
    expect(ago(now - 45_000, now)).toBe("45 s ago");
    expect(ago(now - 5 * 60_000, now)).toBe("5 min ago");
    expect(ago(now - 3 * 3600_000, now)).toBe("3 h ago");
    expect(ago(now - 86400_000, now)).toBe("1 day ago");
  });
});
