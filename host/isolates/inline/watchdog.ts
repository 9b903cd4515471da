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
 * running for a while) means the main thread is gone: the worker reports whose code the entry went
 * into (bundle, deployment and owner: the supervisor quarantines them) and ends the process so
 * `platform host`'s supervisor starts a new one.
 *
 * The same worker measures the main thread's CPU in the entry open now, every {@link CPU_TICK_MS}
 * while entries are being opened ({@link CPU_IDLE_TICK_MS} once none was for a second),
 * from the kernel's figure (`/proc/self/task/<pid>/schedstat`), and writes it where the inline
 * sentinel reads it: the sentinel then stops an entry for the CPU it used, not for the time the
 * machine did not let the host run (sentinel.ts). It counts from the main thread's CPU at the
 * entry's start, which the host reads and marks beside the entry; where the host could not, the
 * whole time since the look before the entry's first counts as its CPU. Either way the figure is
 * never under the truth by more than the kernel's lag. (Counting from the look before made an
 * entry that began after a long gap between looks, the host held off a core, look heavy.)
 */
const STUCK_MS = 1000;
const CHECK_MS = 250;
const CPU_TICK_MS = 5;
/** The measuring tick once no entry was opened for a second: an idle host wakes it seldom. */
const CPU_IDLE_TICK_MS = 50;

/** The host writes the main thread's CPU at an entry's start modulo this (µs): it fits a cell. */
const WRAP_US = 2 ** 31;

const WORKER_SOURCE = `
const { workerData, parentPort } = require("node:worker_threads");
const { openSync, readSync, writeSync } = require("node:fs");
const state = new Int32Array(workerData.buffer);
const { cells, reportFd } = workerData;
const seqCell = cells.seq;
const openCell = cells.open;
const subjects = new Map();
parentPort.on("message", ([slot, subject]) => {
  if (subject) subjects.set(slot, subject);
  else subjects.delete(slot);
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
  const subject = subjects.get(slot);
  if (reportFd > 2 && subject) try { writeSync(reportFd, "crash " + subject + "\\n"); } catch {}
  writeSync(2, "platform: catastrophic isolate error (an inline handler's thread stopped responding); stopping so the supervisor restarts the host\\n");
  process.kill(process.pid, "SIGKILL");
}, ${CHECK_MS});

const schedstat = (() => {
  try { return openSync("/proc/self/task/" + process.pid + "/schedstat", "r"); } catch { return -1; }
})();
const text = Buffer.alloc(128);
/** The main thread's CPU so far (µs), or -1. */
function mainCpuUs() {
  try {
    const n = readSync(schedstat, text, 0, text.length, 0);
    return Number(text.toString("latin1", 0, n).split(" ")[0]) / 1000;
  } catch { return -1; }
}
if (schedstat >= 0 && mainCpuUs() >= 0) {
  Atomics.store(state, cells.cpuSeq, -1);
  let measuring = -1;
  let startUs = 0;
  let lastLook = performance.now();
  let lastSeq = -1;
  let openedAt = 0;
  const measure = (look) => {
    const sinceLastLookUs = (look - lastLook) * 1000;
    lastLook = look;
    const entry = Atomics.load(state, seqCell);
    if (entry !== lastSeq) {
      lastSeq = entry;
      openedAt = look;
    }
    if (Atomics.load(state, openCell) === 0) return;
    const now = mainCpuUs();
    if (now < 0) return;
    if (entry !== measuring) {
      measuring = entry;
      // The main thread's CPU when the entry began, as the host read it; else the entry opened
      // since the last look at the earliest, and used at most that long before this one.
      const startCell = Atomics.load(state, cells.startCpuUs);
      startUs = startCell >= 0 ? now - ((now % ${WRAP_US} - startCell + ${WRAP_US}) % ${WRAP_US}) : now - sinceLastLookUs;
    }
    Atomics.store(state, cells.cpuUs, Math.min(2 ** 31 - 1, Math.max(0, Math.round(now - startUs))));
    Atomics.store(state, cells.cpuSeq, entry);
  };
  const tick = () => {
    const look = performance.now();
    measure(look);
    setTimeout(tick, look - openedAt < 1000 ? ${CPU_TICK_MS} : ${CPU_IDLE_TICK_MS});
  };
  tick();
}
`;

let worker: Worker | undefined;

/** Cells of the inline sentinel's state the watching thread reads and writes (see sentinel.ts). */
export interface WatchedCells {
  /** Counts the inline entries opened. */
  seq: number;
  /** Non-zero while one is open. */
  open: number;
  /** Which entry {@link cpuUs} is for: written by the watching thread (-1: none yet; left at -2 where it cannot measure). */
  cpuSeq: number;
  /** The main thread's CPU in that entry so far (µs). */
  cpuUs: number;
  /** The main thread's CPU when the open entry began (µs, modulo 2^31), as the host read it; -1: not read. */
  startCpuUs: number;
}

/** Starts the watching thread (once per process) on `buffer`'s {@link WatchedCells}. */
export function watchInlineEntries(buffer: SharedArrayBuffer, cells: WatchedCells): void {
  if (worker) return;
  worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { buffer, cells, reportFd: supervisorFd() },
  });
  worker.unref();
}

/**
 * Tells the watching thread whose code the isolate in sentinel slot `slot` runs, as the crash
 * line's words (crash-record.ts; `""`: forget the slot), so a stuck entry names the code to
 * quarantine. Once per isolate, never per entry.
 */
export function nameInlineSlot(slot: number, crashWords: string): void {
  worker?.postMessage([slot, crashWords]);
}
