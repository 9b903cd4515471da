import { Worker } from "node:worker_threads";
import { supervisorFd } from "../crash-record.js";

/**
 * Guards the main thread while it runs user code inline. When V8 gives up on an isolate (one
 * allocation far beyond its heap, say), isolated-vm parks the thread that was running it forever;
 * inline, that thread is the host's main thread, so the host's own catastrophic-error handler
 * (an event on that same thread) never runs. A small worker thread watches the cells the main
 * thread marks each inline entry in (the inline sentinel's, see sentinel.ts): an entry still
 * open after {@link STUCK_MS} and still open at the next check (entries are cut at their slice or
 * the handler's CPU limit, far below that; the second look spares a host the machine merely stopped
 * running for a while) means the main thread is gone: the worker reports the bundle of the isolate
 * the entry went into (the supervisor quarantines it) and ends the process so `platform host`'s
 * supervisor starts a new one.
 */
const STUCK_MS = 1000;
const CHECK_MS = 250;

const WORKER_SOURCE = `
const { workerData, parentPort } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const state = new Int32Array(workerData.buffer);
const { seqCell, openCell, reportFd } = workerData;
const bundles = new Map();
parentPort.on("message", ([slot, bundle]) => {
  if (bundle) bundles.set(slot, bundle);
  else bundles.delete(slot);
});
let seen = -1;
let since = Date.now();
let suspected = false;
setInterval(() => {
  const entry = Atomics.load(state, seqCell);
  const slot = Atomics.load(state, openCell);
  if (slot === 0 || entry !== seen) {
    seen = entry;
    since = Date.now();
    suspected = false;
    return;
  }
  if (Date.now() - since <= ${STUCK_MS}) return;
  if (!suspected) {
    suspected = true;
    return;
  }
  // The supervisor channel's crash line (see crash-record.ts).
  const bundle = bundles.get(slot);
  if (reportFd > 2 && bundle) try { writeSync(reportFd, "crash " + bundle + "\\n"); } catch {}
  writeSync(2, "platform: catastrophic isolate error (an inline handler's thread stopped responding); stopping so the supervisor restarts the host\\n");
  process.kill(process.pid, "SIGKILL");
}, ${CHECK_MS});
`;

let worker: Worker | undefined;

/**
 * Starts the watching thread (once per process) on `buffer`, where cell `seqCell` counts the inline
 * entries opened and cell `openCell` is non-zero while one is open.
 */
export function watchInlineEntries(buffer: SharedArrayBuffer, seqCell: number, openCell: number): void {
  if (worker) return;
  worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { buffer, seqCell, openCell, reportFd: supervisorFd() },
  });
  worker.unref();
}

/**
 * Tells the watching thread which bundle the isolate in sentinel slot `slot` runs (`""`: forget
 * the slot), so a stuck entry names the code to quarantine. Once per isolate, never per entry.
 */
export function nameInlineSlot(slot: number, bundle: string): void {
  worker?.postMessage([slot, bundle]);
}
