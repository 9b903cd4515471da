import { Worker } from "node:worker_threads";

/**
 * Guards the main thread while it runs user code inline. When V8 gives up on an isolate (one
 * allocation far beyond its heap, say), isolated-vm parks the thread that was running it forever;
 * inline, that thread is the host's main thread, so the host's own catastrophic-error handler
 * (an event on that same thread) never runs. A small worker thread watches a counter the main
 * thread bumps on each inline entry: an entry still open after {@link STUCK_MS} (entries are cut
 * at their slice or the handler's CPU limit, far below that) means the main thread is gone, and the
 * worker ends the process so `platform host`'s supervisor starts a new one.
 */
const STUCK_MS = 5000;
const CHECK_MS = 250;

const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const state = new Int32Array(workerData.buffer);
let seen = -1;
let since = Date.now();
setInterval(() => {
  const entry = Atomics.load(state, 0);
  if (Atomics.load(state, 1) === 0 || entry !== seen) {
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

/** [entries started, 1 while an entry is open]. */
let state: Int32Array | undefined;

function start(): Int32Array {
  const buffer = new SharedArrayBuffer(8);
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { buffer } });
  worker.unref();
  return new Int32Array(buffer);
}

/** Marks the start of an inline entry (starts the watching thread on first use). */
export function inlineEntryOpened(): void {
  state ??= start();
  Atomics.add(state, 0, 1);
  Atomics.store(state, 1, 1);
}

/** Marks the end of an inline entry. */
export function inlineEntryClosed(): void {
  if (state) Atomics.store(state, 1, 0);
}
