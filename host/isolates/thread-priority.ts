import { readdirSync } from "node:fs";
import { setPriority } from "node:os";

/**
 * Which of this process's threads run isolates, and their priority (docs/security.md
 * "Scheduling"). isolated-vm gives every isolate that runs at the same moment a thread of its own,
 * and the operating system shares the cores evenly between threads of equal priority: with 20
 * deployments spinning on a 2-core machine, the main thread (which answers every request and runs
 * light handlers inline) would get a core only one turn in ten. Isolates' threads therefore run at
 * a lower priority (`platform host --isolate-nice`, 10 by default): a busy isolate loses nothing
 * while cores are idle, and its limit is CPU time, measured so that waiting for a core is not
 * charged (isolate-cpu-clock.ts).
 *
 * isolated-vm does not name its threads, so the threads of this process that exist when the first
 * host starts (the main thread, V8's and libuv's workers) are the host's own, and every thread born
 * later is taken for an isolate's. On Linux a thread's nice value is its own: `setPriority` on a
 * thread id changes that thread only, and raising it needs no privilege. Elsewhere this does
 * nothing.
 */
/** The nice value of isolates' threads unless the operator chooses another. */
export const DEFAULT_ISOLATE_NICE = 10;

const TASKS = "/proc/self/task";
/** The host's own threads (the first look's); undefined until a host starts tracking. */
let hostThreads: Set<string> | undefined;
/** Threads born since, taken for isolates'. */
const isolateThreads = new Set<string>();
/** The nice value given to isolates' threads (0: left alone). */
let isolateNice = 0;
let lastLook = 0;
/** At most one look per this many ms from the call path (the sweep covers the rest). */
const LOOK_EVERY_MS = 5;

function threadIds(): string[] | undefined {
  try {
    return readdirSync(TASKS);
  } catch {
    return undefined;
  }
}

/**
 * Starts telling isolates' threads from the host's own in this process, the threads that exist now
 * being the host's, and gives isolates' threads nice value `nice` (0-19; 0 leaves their priority
 * alone). The first call's value holds. Does nothing where threads cannot be listed.
 */
export function trackIsolateThreadsFromNow(nice: number): void {
  if (hostThreads) return;
  const ids = threadIds();
  if (ids === undefined) return;
  isolateNice = Number.isInteger(nice) && nice > 0 && nice < 20 ? nice : 0;
  hostThreads = new Set(ids);
}

/** True once {@link trackIsolateThreadsFromNow} started in this process. */
export function isolateThreadsTracked(): boolean {
  return hostThreads !== undefined;
}

/** The nice value isolates' threads get (0 while untracked or left alone). */
export function isolateThreadNice(): number {
  return hostThreads ? isolateNice : 0;
}

/** The isolates' threads seen so far (ended ones may linger until {@link forgetIsolateThread}). */
export function isolateThreadIds(): ReadonlySet<string> {
  return isolateThreads;
}

/** Forgets a thread that ended. */
export function forgetIsolateThread(id: string): void {
  isolateThreads.delete(id);
}

/**
 * Takes note of threads born since the last look (nothing while untracked), lowering their
 * priority. Called after an isolate starts work on its thread (the thread exists by then) and by a
 * periodic sweep.
 */
export function lookForIsolateThreads(force = false): void {
  if (!hostThreads) return;
  const now = Date.now();
  if (!force && now - lastLook < LOOK_EVERY_MS) return;
  lastLook = now;
  const ids = threadIds();
  if (!ids) return;
  for (const id of ids) {
    if (hostThreads.has(id) || isolateThreads.has(id)) continue;
    isolateThreads.add(id);
    if (isolateNice === 0) continue;
    try {
      setPriority(Number(id), isolateNice);
    } catch {
      // The thread ended in the meantime.
    }
  }
  if (isolateThreads.size > 2 * ids.length + 64) {
    const live = new Set(ids);
    for (const id of isolateThreads) if (!live.has(id)) isolateThreads.delete(id);
  }
}
