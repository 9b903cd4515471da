import { Worker } from "node:worker_threads";

/**
 * Guards the main thread while it runs user code inline. When V8 gives up on an isolate (one
 * allocation far beyond its heap, say), isolated-vm parks the thread that was running it forever;
 * inline, that thread is the host's main thread, so the host's own catastrophic-error handler
 * (an event on that same thread) never runs. A small worker thread watches the cells the main
 * thread marks each inline entry in (the inline sentinel's, see sentinel.ts): an entry still
 * open after {@link STUCK_MS} (entries are cut at their slice or the handler's CPU limit, far below
 * that) means the main thread is gone, and the worker ends the process so `platform host`'s
 * supervisor starts a new one.
 */
const STUCK_MS = 5000;
const CHECK_MS = 250;

const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const state = new Int32Array(workerData.buffer);
const { seqCell, openCell } = workerData;
let seen = -1;
let since = Date.now();
setInterval(() => {
  const entry = Atomics.load(state, seqCell);
  if (Atomics.load(state, openCell) === 0 || entry !== seen) {
    seen = entry;
    since = Date.now();
    return;
  }
  if (Date.now() - since > ${STUCK_MS}) {
    writeSync(2, "platform: catastrophic isolate error (an inline handler's thread stopped responding); stopping so the supervisor restarts the host\\n");
    process.kill(process.pid, "SIGKILL");
  }
}, ${CHECK_MS});
`;

let started = false;

/**
 * Starts the watching thread (once per process) on `buffer`, where cell `seqCell` counts the inline
 * entries opened and cell `openCell` is non-zero while one is open.
 */
export function watchInlineEntries(buffer: SharedArrayBuffer, seqCell: number, openCell: number): void {
  if (started) return;
  started = true;
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { buffer, seqCell, openCell } });
  worker.unref();
}
