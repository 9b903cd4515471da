/**
 * A host process whose main thread is inside an inline entry when the whole process is stopped
 * (SIGSTOP, as a busy machine or a paused VM would) for a while, then continued. The entry spins
 * until it sees the pause (a jump of the wall clock), then `after` ms more; it gives up after
 * 300 ms without one. The pause comes about 100 ms in, once the watchdog thread has had time to
 * measure the entry. A second isolate with a 20 ms slice, never entered, makes the sentinel look
 * every 10 ms, so it has seen the entry before the pause. Prints JSON: whether the sentinel
 * stopped the isolate, how long the entry spun before the pause, and the pause it saw (0: none).
 * See host/isolates/inline/sentinel.test.ts.
 * Usage: paused-inline-entry.ts <slice ms> <pause ms> <after ms>.
 */
import { spawn } from "node:child_process";
import ivm from "isolated-vm";
import { InlineSentinel } from "../../host/isolates/inline/sentinel.js";

const [sliceMs, pauseMs, afterMs] = process.argv.slice(2).map(Number) as [number, number, number];
const sentinel = InlineSentinel.shared();
const isolate = new ivm.Isolate({ memoryLimit: 16 });
const context = isolate.createContextSync();
const run = context.evalSync(
  `(function (afterMs) {
    const started = Date.now();
    let last = started;
    for (;;) {
      const now = Date.now();
      if (now - last > 100) {
        const end = now + afterMs;
        while (Date.now() < end) {}
        return (last - started) + "," + (now - last);
      }
      if (now - started > 300) return "0,0";
      last = now;
    }
  })`,
  { reference: true },
) as ivm.Reference<(afterMs: number) => string>;
const ticker = new ivm.Isolate({ memoryLimit: 8 });
const tickerSlot = sentinel.register(ticker, 20);
const slot = sentinel.register(isolate, sliceMs);
while (!sentinel.watches(slot)) await new Promise((resolve) => setTimeout(resolve, 5));
// Let the watchdog thread start measuring before the entry.
await new Promise((resolve) => setTimeout(resolve, 100));

// Another process stops and continues this one while the entry spins.
const signals = `sleep 0.1; kill -STOP ${process.pid}; sleep ${pauseMs / 1000}; kill -CONT ${process.pid}`;
const pauser = spawn("sh", ["-c", signals], { stdio: "ignore" });
const exited = new Promise((resolve) => pauser.once("exit", resolve));
let stopped = false;
let spun = "0,0";
sentinel.open(slot);
try {
  spun = run.applySync(undefined, [afterMs]);
} catch {
  stopped = true;
} finally {
  sentinel.close();
}
await exited;
// The sentinel may still be looking at the entry it saw last: give it a few of its ticks.
await new Promise((resolve) => setTimeout(resolve, 100));
stopped ||= isolate.isDisposed || sentinel.stopped(slot);
const [beforeMs, pausedMs] = spun.split(",").map(Number);
process.stdout.write(`${JSON.stringify({ stopped, beforeMs, pausedMs })}\n`);
// The sentinel loops on an isolated-vm thread until its registry changes: let it go before exiting.
sentinel.unregister(slot);
sentinel.unregister(tickerSlot);
ticker.dispose();
if (!isolate.isDisposed) isolate.dispose();
await new Promise((resolve) => setTimeout(resolve, 20));
process.exit(0);
