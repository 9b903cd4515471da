import ivm from "isolated-vm";
import { describe, expect, it } from "vitest";
import { niceAfterAnIsolateRan, niceByThread } from "../../test/helpers/threads.js";
import {
  busyIsolateThreadNice,
  isolateThreadIds,
  isolateThreadNice,
  isolateThreadsTracked,
  lookForIsolateThreads,
  niceForBusyThreads,
  setBusyIsolateThreads,
  trackIsolateThreadsFromNow,
} from "./thread-priority.js";

/** The nice value an operator lowering isolates' threads chooses (`platform host --isolate-nice 10`). */
const LOWERED_NICE = 10;

describe.runIf(process.platform === "linux")("isolate threads' priority", () => {
  it("lowers threads born after the host's, and leaves the host's own", async () => {
    // Nothing is tracked until a host starts.
    lookForIsolateThreads(true);
    expect(isolateThreadsTracked()).toBe(false);
    expect(isolateThreadNice()).toBe(0);
    trackIsolateThreadsFromNow(LOWERED_NICE);
    expect(isolateThreadsTracked()).toBe(true);
    expect(isolateThreadNice()).toBe(LOWERED_NICE);
    const before = niceByThread();
    const after = await niceAfterAnIsolateRan();
    const born = [...after.keys()].filter((id) => !before.has(id));
    expect(born.length, "running an isolate started no thread").toBeGreaterThan(0);
    for (const id of born) {
      expect(after.get(id)).toBe(LOWERED_NICE);
      expect([...isolateThreadIds()]).toContain(id);
    }
    for (const [id, nice] of before) {
      if (after.has(id)) expect(after.get(id)).toBe(nice);
      expect([...isolateThreadIds()]).not.toContain(id);
    }
    expect(after.get(String(process.pid))).toBe(before.get(String(process.pid)));
  });
});

describe("isolate threads' priority follows how many are busy", () => {
  it("keeps one or two busy threads at the chosen value and lowers more so they weigh as two", () => {
    expect(niceForBusyThreads(10, 0)).toBe(10);
    expect(niceForBusyThreads(10, 2)).toBe(10);
    // Three at nice 12 (weight 70 each) weigh 210, under two at nice 10 (110 each).
    expect(niceForBusyThreads(10, 3)).toBe(12);
    expect(niceForBusyThreads(10, 5)).toBe(15);
    expect(niceForBusyThreads(10, 8)).toBe(17);
    expect(niceForBusyThreads(10, 30)).toBe(19);
    expect(niceForBusyThreads(19, 100)).toBe(19);
    expect(niceForBusyThreads(5, 1)).toBe(5);
  });

  it.runIf(process.platform === "linux")(
    "lowers the busy isolate threads, keeps the idle ones, and raises them back when they calm down",
    async () => {
      trackIsolateThreadsFromNow(LOWERED_NICE);
      const isolate = new ivm.Isolate({ memoryLimit: 16 });
      try {
        const context = await isolate.createContext();
        await context.eval("1", { promise: false });
        lookForIsolateThreads(true);
        const ids = [...isolateThreadIds()].filter((id) => niceByThread().has(id));
        expect(ids.length).toBeGreaterThan(0);
        const [busy] = ids as [string];
        // 30 busy threads (the others' ids are made up: only the count matters for the value).
        setBusyIsolateThreads(new Set([busy, ...Array.from({ length: 29 }, (_, i) => `busy-${i}`)]));
        expect(busyIsolateThreadNice()).toBe(19);
        expect(isolateThreadNice()).toBe(LOWERED_NICE);
        const lowered = niceByThread();
        expect(lowered.get(busy)).toBe(19);
        for (const id of ids) if (id !== busy) expect(lowered.get(id)).toBe(LOWERED_NICE);
        setBusyIsolateThreads(new Set());
        expect(busyIsolateThreadNice()).toBe(LOWERED_NICE);
        // Raising a priority back needs CAP_SYS_NICE; without it the thread stays where it is.
        const expected = process.getuid?.() === 0 ? LOWERED_NICE : 19;
        expect(niceByThread().get(busy)).toBe(expected);
      } finally {
        isolate.dispose();
      }
    },
  );
});
