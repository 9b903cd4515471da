import { describe, expect, it } from "vitest";
import type { CallUsage } from "../../sdk/protocol/index.js";
import { HandlerStats, largestShare } from "./handler-stats.js";

const START = Date.UTC(2026, 10, 26, 10, 0, 0);

function usage(wallMs: number, rowsRead = 0): CallUsage {
  return {
    rowsReturned: 0,
    rowsRead,
    bytesRead: 0,
    rangesRead: 0,
    indexScans: 0,
    writes: 0,
    cpuMs: 1,
    wallMs,
  };
}

describe("HandlerStats", () => {
  it("reads p50 and p99 within 12% of the exact percentiles", () => {
    let now = START;
    const stats = new HandlerStats(() => now);
    const times: number[] = [];
    for (let i = 1; i <= 1000; i++) {
      const ms = 0.3 * 1.01 ** i; // 0.3 ms to 6 s
      times.push(ms);
      stats.record("app", "list", "query", i % 10 === 0, usage(ms));
      if (i % 100 === 0) now += 60_000;
    }
    const [list] = stats.summary("app").handlers;
    expect(list).toMatchObject({ handler: "list", kind: "query", calls: 1000, failures: 100 });
    const exact = (share: number) => times[Math.ceil(times.length * share) - 1] as number;
    expect(Math.abs((list?.p50Ms ?? 0) / exact(0.5) - 1)).toBeLessThan(0.13);
    expect(Math.abs((list?.p99Ms ?? 0) / exact(0.99) - 1)).toBeLessThan(0.13);
    expect(list?.minutes.map((m) => m.calls)).toEqual(new Array(10).fill(100));
  });

  it("keeps the last 60 minutes only, and the largest budget share of each", () => {
    let now = START;
    const stats = new HandlerStats(() => now);
    stats.record("app", "list", "query", false, usage(1, 2500));
    now += 59 * 60_000;
    stats.record("app", "list", "query", false, usage(1, 50));
    expect(stats.summary("app").handlers[0]).toMatchObject({ calls: 2, maxShare: 0.5 });
    now += 60_000;
    const [list] = stats.summary("app").handlers;
    expect(list).toMatchObject({ calls: 1, maxShare: 0.01 });
    // A slot reused an hour later starts from zero.
    stats.record("app", "list", "query", false, usage(1));
    expect(stats.summary("app").handlers[0]?.calls).toBe(2);
    now += 120 * 60_000;
    expect(stats.summary("app").handlers).toEqual([]);
  });

  it("bounds the handlers counted per deployment and forgets a deleted deployment", () => {
    const stats = new HandlerStats(() => START);
    for (let i = 0; i < 300; i++) stats.record("app", `h${i}`, "query", false, usage(1));
    expect(stats.summary("app").handlers).toHaveLength(256);
    expect(stats.summary("other").handlers).toEqual([]);
    stats.purgeDeployment("app");
    expect(stats.summary("app").handlers).toEqual([]);
  });

  it("measures the largest share against every budget and the wall limit", () => {
    expect(largestShare(usage(7500))).toBe(0.5);
    expect(largestShare({ ...usage(1), cpuMs: 1500 })).toBe(1.5);
  });
});
