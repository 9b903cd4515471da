import { type ChildProcess, spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import ivm from "isolated-vm";
import { afterAll, describe, expect, it } from "vitest";
import { isolateCpuClock } from "./isolate-cpu-clock.js";
import { lookForIsolateThreads, trackIsolateThreadsFromNow } from "./thread-priority.js";

/** The nice value an operator lowering isolates' threads chooses (`platform host --isolate-nice 10`). */
const LOWERED_NICE = 10;

const hogs: ChildProcess[] = [];
afterAll(() => {
  for (const hog of hogs) hog.kill("SIGKILL");
});

describe.runIf(process.platform === "linux")("the isolates' CPU clock", () => {
  it("leaves out the time a lowered isolate's thread waits for a core", async () => {
    trackIsolateThreadsFromNow(LOWERED_NICE);
    // One process per core at the host's priority, busy the whole time: a lowered thread gets a
    // small share of a core (about a tenth at nice 10) however fast the machine is.
    for (let i = 0; i < availableParallelism(); i++) {
      hogs.push(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const isolate = new ivm.Isolate({ memoryLimit: 16 });
    try {
      const context = await isolate.createContext();
      const cpuBefore = isolate.cpuTime;
      const running = context.eval("const end = Date.now() + 1500; while (Date.now() < end) {}", {
        timeout: 60_000,
        promise: false,
      });
      await new Promise((resolve) => setTimeout(resolve, 20));
      lookForIsolateThreads(true);
      const wallStart = process.hrtime.bigint();
      const clockStart = isolateCpuClock();
      await running;
      const clockRan = Number(isolateCpuClock() - clockStart);
      const wall = Number(process.hrtime.bigint() - wallStart);
      const steady = Number(isolate.cpuTime - cpuBefore);
      console.log(
        `1.5 s loop on a thread at nice ${LOWERED_NICE} beside ${hogs.length} busy processes: wall ${(wall / 1e6).toFixed(0)} ms, isolated-vm's figure ${(steady / 1e6).toFixed(0)} ms, clock ${(clockRan / 1e6).toFixed(0)} ms`,
      );
      // isolated-vm counts the whole stretch, waits included (less the moment the main thread
      // takes to hear the loop ended, which a busy machine stretches)...
      expect(steady).toBeGreaterThan(0.8 * wall);
      // ...the clock leaves out the waits, most of the stretch, but never charges less than its
      // floor share of the wall time.
      expect(clockRan).toBeLessThan(0.5 * wall);
      expect(clockRan).toBeGreaterThanOrEqual(0.09 * wall);
    } finally {
      isolate.dispose();
    }
  });
});
