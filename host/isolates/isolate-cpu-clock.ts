import { closeSchedstatsBut, readSchedstat } from "./schedstat-files.js";
import { forgetIsolateThread, isolateThreadIds, setBusyIsolateThreads } from "./thread-priority.js";

/**
 * A clock that runs at the pace isolates' threads actually get a core. isolated-vm measures the
 * stretches user code runs on a steady clock (see cpu-meter.ts), so a thread that waits for a core
 * (a lower priority, a busy machine) is charged its waiting. This clock
 * advances by the wall time elapsed times the share of their runnable time that isolates' threads
 * spent on a core (Linux's `/proc/self/task/<tid>/schedstat`: time on a core, time waiting in the
 * run queue), so a stretch measured on it costs about what it really used. The share is one for
 * all isolates' threads together; they run at one priority, so the scheduler treats them alike.
 * Where the figures cannot be read the share is 1 and the clock is the steady one.
 *
 * The same figures say which isolates' threads are busy, which sets their priority (see
 * thread-priority.ts).
 */

/** Samples at most this often (ns); between samples the clock runs at the last share. */
const SAMPLE_EVERY_NS = 50_000_000n;
/**
 * The least share assumed: a stretch is never charged less than this part of its wall time, so a
 * loop is stopped within ten times its CPU limit (10 s) of wall time however starved its thread or
 * skewed the shares between cores, before the handler's wall limit (15 s).
 */
const MIN_SHARE = 0.1;

let sampledAt = process.hrtime.bigint();
/** The clock's reading at `sampledAt` (ns). */
let reading = 0n;
let share = 1;
/** Each thread's time on a core and time waiting for one at the last sample (ns). */
const lastFigures = new Map<string, [number, number]>();

/** A thread runnable (on a core or waiting for one) over at least this part of an interval is busy. */
const BUSY_PART = 0.5;

/**
 * Measures the share of the last interval and advances the clock by it; tells thread-priority.ts
 * which isolates' threads were busy. Reads the threads known: listing `/proc/self/task` here too
 * cost an idle host's next call 0.1 ms, and new threads are looked for at each threaded start and
 * by the pool's sweep (isolate-pool.ts).
 */
function sample(now: bigint): void {
  const busyFrom = Number(now - sampledAt) * BUSY_PART;
  const busy = new Set<string>();
  let ran = 0;
  let waited = 0;
  const read = new Set<string>();
  for (const id of isolateThreadIds()) {
    const current = readSchedstat(id);
    if (!current) {
      forgetIsolateThread(id);
      lastFigures.delete(id);
      continue;
    }
    read.add(id);
    const previous = lastFigures.get(id) ?? [0, 0];
    const threadRan = current[0] - previous[0];
    const threadWaited = current[1] - previous[1];
    if (threadRan + threadWaited >= busyFrom) busy.add(id);
    ran += threadRan;
    waited += threadWaited;
    lastFigures.set(id, current);
  }
  setBusyIsolateThreads(busy);
  // Threads thread-priority.ts no longer lists (ended, seen gone by its sweep) keep no file open.
  if (lastFigures.size > read.size) {
    for (const id of [...lastFigures.keys()]) if (!read.has(id)) lastFigures.delete(id);
    closeSchedstatsBut(read);
  }
  const measured = ran + waited > 0 ? Math.max(MIN_SHARE, Math.min(1, ran / (ran + waited))) : 1;
  reading += BigInt(Math.round(Number(now - sampledAt) * measured));
  sampledAt = now;
  share = measured;
}

/**
 * The clock's reading now (ns). Takes a new sample when the last is older than
 * {@link SAMPLE_EVERY_NS}, so a reading taken at an execution's boundary is never extrapolated
 * from long ago (at most a sample per interval however many isolates read it).
 */
export function isolateCpuClock(): bigint {
  const now = process.hrtime.bigint();
  if (now - sampledAt >= SAMPLE_EVERY_NS) sample(now);
  return reading + BigInt(Math.round(Number(now - sampledAt) * share));
}
