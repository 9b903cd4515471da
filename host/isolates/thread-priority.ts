import { readdirSync } from "node:fs";
import { setPriority } from "node:os";

/**
 * Optionally, isolates' threads run at a lower priority than the host's own (`platform host
 * --isolate-nice`; docs/security.md "Scheduling").
 * isolated-vm gives every isolate that runs at the same moment a thread of its own, and the
 * operating system shares the cores evenly between threads of equal priority: with 20 deployments
 * spinning on a 2-core machine, the main thread (which answers every request and runs light
 * handlers inline) would get a core only one turn in ten. A lower priority costs a busy isolate
 * nothing when cores are idle, and its limits are CPU time, which a lower priority does not change.
 *
 * isolated-vm does not name its threads, so the threads of this process that exist when the first
 * host starts (the main thread, V8's and libuv's workers) keep their priority, and every thread
 * born later is taken for an isolate's. On Linux a thread's nice value is its own: `setPriority`
 * on a thread id changes that thread only, and raising it needs no privilege. Elsewhere this
 * does nothing.
 */
/** The nice value `--isolate-nice` suggests for hosts on a machine of their own. */
export const SUGGESTED_ISOLATE_NICE = 10;

const TASKS = "/proc/self/task";
/** Thread ids seen so far (the first look's are the host's own); undefined while off. */
let seen: Set<string> | undefined;
/** The nice value given to isolates' threads. */
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
 * Turns the lower priority on for this process (nice `nice`, 1-19): remembers the process's threads
 * now as the host's own. The first call's value holds; 0 does nothing.
 */
export function lowerIsolateThreadsFromNow(nice: number): void {
  if (seen || !(Number.isInteger(nice) && nice > 0 && nice < 20)) return;
  isolateNice = nice;
  const ids = threadIds();
  seen = new Set(ids ?? []);
  if (ids === undefined) seen = undefined;
}

/** True once {@link lowerIsolateThreadsFromNow} turned it on in this process. */
export function isolateThreadsLowered(): boolean {
  return seen !== undefined;
}

/**
 * Lowers the priority of threads born since the last look (nothing while off). Called after an isolate starts work
 * on its thread (the thread exists by then) and by a periodic sweep.
 */
export function lowerIsolateThreads(force = false): void {
  if (!seen) return;
  const now = Date.now();
  if (!force && now - lastLook < LOOK_EVERY_MS) return;
  lastLook = now;
  const ids = threadIds();
  if (!ids) return;
  for (const id of ids) {
    if (seen.has(id)) continue;
    seen.add(id);
    try {
      setPriority(Number(id), isolateNice);
    } catch {
      // The thread ended in the meantime.
    }
  }
  if (seen.size > 4 * ids.length + 64) seen = new Set([...seen].filter((id) => ids.includes(id)));
}
