import { readFileSync } from "node:fs";
import { getPriority } from "node:os";
import { describe, expect, it } from "vitest";
import { niceAfterAnIsolateRan, niceByThread } from "../../test/helpers/threads.js";
import { mainThreadRaise, raiseMainThread, trackIsolateThreadsFromNow } from "./thread-priority.js";

/** How far below its nice value this process may take a thread: `CAP_SYS_NICE` (bit 23 of CapEff) or `RLIMIT_NICE`. */
function allowedRaise(base: number): number {
  const capabilities = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? "0";
  if ((BigInt(`0x${capabilities}`) >> 23n) & 1n) return 20 + base;
  const limit = /^Max nice priority\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
  return Math.max(0, base - (20 - Number(limit ?? 0)));
}

describe.runIf(process.platform === "linux")("the host's main thread's priority", () => {
  it("raises the main thread as far as allowed, and puts isolates' threads born later back at the host's own", async () => {
    const base = getPriority(0);
    // Nothing changes until a host tracks its threads.
    expect(raiseMainThread(5)).toBe(0);
    trackIsolateThreadsFromNow(0);
    const before = niceByThread();
    const raised = raiseMainThread(5);
    expect(raised).toBe(Math.min(5, allowedRaise(base)));
    expect(mainThreadRaise()).toEqual({ asked: 5, raised });
    expect(getPriority(0)).toBe(base - raised);
    // Only the first call changes anything.
    expect(raiseMainThread(5)).toBe(0);
    expect(getPriority(0)).toBe(base - raised);

    const after = await niceAfterAnIsolateRan();
    const born = [...after.keys()].filter((id) => !before.has(id));
    expect(born.length, "running an isolate started no thread").toBeGreaterThan(0);
    // Born with the raised main thread's value, they run tenants' code at the host's own.
    for (const id of born) expect(after.get(id), `thread ${id}`).toBe(base);
    // The host's other threads keep theirs.
    for (const [id, nice] of before)
      if (id !== String(process.pid) && after.has(id)) expect(after.get(id)).toBe(nice);
  });
});
