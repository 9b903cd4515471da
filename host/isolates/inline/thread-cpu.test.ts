import { describe, expect, it } from "vitest";
import { threadCpuNs } from "./thread-cpu.js";

describe.runIf(process.platform === "linux")("a thread's own CPU from the kernel", () => {
  it("leaves out the time the thread waits off a core", () => {
    const before = threadCpuNs() as number;
    expect(before).toBeGreaterThan(0);
    // Blocked for 200 ms: the thread uses no CPU however busy the machine is.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    const after = threadCpuNs(true) as number;
    expect(after - before).toBeLessThan(100_000_000);
  });

  it("counts the time the thread computes, brought up to date when asked", () => {
    const before = threadCpuNs(true) as number;
    // Spins until the process has used 50 ms of CPU more: most of it on this thread.
    const start = process.cpuUsage();
    let used = 0;
    while (used < 50_000) {
      const now = process.cpuUsage(start);
      used = now.user + now.system;
    }
    const after = threadCpuNs(true) as number;
    expect(after - before).toBeGreaterThan(25_000_000);
    // A plain reading is never ahead of a fresh one taken after it.
    const plain = threadCpuNs() as number;
    expect(plain).toBeLessThanOrEqual(threadCpuNs(true) as number);
  });
});
