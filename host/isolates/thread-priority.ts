import { readdirSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { getPriority, setPriority } from "node:os";

/**
 * Which of this process's threads run isolates, and their priority (docs/security.md
 * "Scheduling"). isolated-vm gives every isolate that runs at the same moment a thread of its own,
 * and the operating system shares the cores evenly between threads of equal priority: with 20
 * deployments spinning on a 2-core machine, the main thread (which answers every request and runs
 * light handlers inline) would get a core only one turn in ten. An operator may therefore run
 * isolates' threads at a lower priority (`platform host --isolate-nice`): a busy isolate loses
 * nothing while cores are idle, and its limit is CPU time, measured so that waiting for a core is
 * not charged (isolate-cpu-clock.ts).
 *
 * By default they keep the host's priority. A lowered thread that maps or unmaps memory holds the
 * process's memory-map lock, which the main thread needs too; beside other busy processes it then
 * waits for a core at its low weight, and the main thread, and every thread queued behind it, waits
 * for it. Twenty tenants churning memory under their limit beside a CPU hog per core stalled a good
 * tenant's calls for seconds that way, against tens of milliseconds at the host's priority. Run
 * tokens (thread-tokens.ts) already bound how many isolates' threads take turns at once, so the
 * main thread keeps answering; what lowering still buys is throughput under tenants that compute
 * (docs/security.md "Scheduling").
 *
 * The operating system weighs each thread alone, so 30 busy isolates' threads at nice 10 would
 * together outweigh the main thread three to one and keep it waiting for a core. The busy ones
 * therefore get a lower priority the more of them are busy (see {@link setBusyIsolateThreads}):
 * together they weigh about what two threads at the chosen value would, down to nice 19. Threads
 * that are not busy keep the chosen value: the inline sentinel's, which must wake in time to stop
 * a handler spinning on the main thread, sleeps nearly all the time. Raising a thread back needs
 * `CAP_SYS_NICE` (or `RLIMIT_NICE`); without, a thread keeps the lowest priority it reached.
 *
 * isolated-vm does not name its threads, so the threads of this process that exist when the first
 * host starts (the main thread, V8's and libuv's workers) are the host's own, and every thread born
 * later is taken for an isolate's. On Linux a thread's nice value is its own: `setPriority` on a
 * thread id changes that thread only, and lowering a thread's priority needs no privilege.
 * Elsewhere this does nothing.
 *
 * The main thread, which reads every socket and answers every request, may also be raised above
 * the host's other threads (see {@link raiseMainThread}). Threads inherit the nice value of the
 * thread that made them, so isolates' threads born afterwards are then put back at the host's
 * own value (or the chosen one) when they are first seen.
 */
/** The nice value of isolates' threads unless the operator chooses another: the host's own. */
export const DEFAULT_ISOLATE_NICE = 0;

const TASKS = "/proc/self/task";
/** The host's own threads (the first look's); undefined until a host starts tracking. */
let hostThreads: Set<string> | undefined;
/** Threads born since, taken for isolates', with the nice value each was given. */
const isolateThreads = new Map<string, number>();
/** The nice value chosen for isolates' threads, counted from {@link baseNice} (0: left alone). */
let isolateNice = 0;
/** The main thread's nice value when tracking started: the host's own priority. */
let baseNice = 0;
/** How many steps the main thread was raised above {@link baseNice} (see {@link raiseMainThread}). */
let mainRaise = 0;
/** How many steps {@link raiseMainThread} was asked for (0 until a tracked host asked). */
let mainRaiseAsked = 0;
/** The nice value busy isolates' threads have now: {@link isolateNice}, or more while many are busy. */
let busyNice = 0;
/**
 * Linux's weight of a thread at each nice value 0-19 (`sched_prio_to_weight`): each step is about
 * 1.25 times less.
 */
const NICE_WEIGHTS = [
  1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
] as const;
/** False once raising isolates' threads' priority back was refused (it needs `CAP_SYS_NICE`). */
let mayRaise = true;
/** How many threads at the chosen nice value isolates' busy threads may weigh together. */
const BUSY_WEIGHT_IN_THREADS = 2;
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
  busyNice = isolateNice;
  baseNice = getPriority(0);
  hostThreads = new Set(ids);
}

/**
 * Raises the calling thread (the host's main thread) up to `steps` nice values above the host's
 * own priority, as far as the process is allowed (`CAP_SYS_NICE`, or `RLIMIT_NICE`), and returns
 * how far it got (0 when not allowed, untracked or already raised). The scheduler then runs the
 * main thread ahead of isolates' threads as soon as it wakes: beside 20 tenants spinning on their
 * threads, a good tenant's queries waited for a core several milliseconds at a time without it.
 * The lock that stalled lowered isolates' threads (see above) does not apply: isolates keep the
 * priority they compete with the machine's other work at. Only the first call changes anything.
 */
export function raiseMainThread(steps: number): number {
  if (!hostThreads || mainRaise > 0) return 0;
  mainRaiseAsked = steps;
  for (let raise = Math.min(steps, 20 + baseNice); raise > 0; raise--) {
    try {
      setPriority(0, baseNice - raise);
      mainRaise = raise;
      return raise;
    } catch {
      // Not allowed this far: try one step less.
    }
  }
  return 0;
}

/**
 * How many nice values the host asked {@link raiseMainThread} to raise the main thread by, and how
 * many it was raised by: fewer where the process may not (both 0 where threads are not tracked).
 */
export function mainThreadRaise(): { asked: number; raised: number } {
  return { asked: mainRaiseAsked, raised: mainRaise };
}

/** True once {@link trackIsolateThreadsFromNow} started in this process. */
export function isolateThreadsTracked(): boolean {
  return hostThreads !== undefined;
}

/** The nice value isolates' threads are given (0 while untracked or left alone). */
export function isolateThreadNice(): number {
  return hostThreads ? isolateNice : 0;
}

/** The nice value busy isolates' threads have now (see {@link setBusyIsolateThreads}). */
export function busyIsolateThreadNice(): number {
  return hostThreads ? busyNice : 0;
}

/**
 * The nice value at which `busy` threads weigh together no more than {@link BUSY_WEIGHT_IN_THREADS}
 * threads at `chosen` (never above 19, never below `chosen`).
 */
export function niceForBusyThreads(chosen: number, busy: number): number {
  const budget = BUSY_WEIGHT_IN_THREADS * (NICE_WEIGHTS[chosen] as number);
  let nice = chosen;
  while (nice < 19 && busy * (NICE_WEIGHTS[nice] as number) > budget) nice++;
  return nice;
}

/**
 * Tells which isolates' threads were busy (running or waiting for a core) over most of the last
 * interval (see isolate-cpu-clock.ts, which measures it): they get the nice value
 * {@link niceForBusyThreads} says for their number, the others the chosen one. Does nothing when
 * their priority is left alone.
 */
export function setBusyIsolateThreads(busy: ReadonlySet<string>): void {
  if (!hostThreads || isolateNice === 0) return;
  busyNice = niceForBusyThreads(isolateNice, busy.size);
  for (const [id, nice] of isolateThreads) {
    const wanted = absolute(busy.has(id) ? busyNice : isolateNice);
    if (wanted === nice || (wanted < nice && !mayRaise)) continue;
    if (renice(id, wanted)) isolateThreads.set(id, wanted);
  }
}

/** The nice value `relative` steps past the host's own: a lower priority, never past 19. */
function absolute(relative: number): number {
  return Math.min(19, baseNice + relative);
}

/** Gives thread `id` nice value `nice`; false when it ended or raising it was refused. */
function renice(id: string, nice: number): boolean {
  try {
    setPriority(Number(id), nice);
    return true;
  } catch (error) {
    if ((error as { info?: { code?: string } }).info?.code === "EACCES") mayRaise = false;
    return false;
  }
}

/** The isolates' threads seen so far (ended ones may linger until {@link forgetIsolateThread}). */
export function isolateThreadIds(): Iterable<string> {
  return isolateThreads.keys();
}

/** Forgets a thread that ended. */
export function forgetIsolateThread(id: string): void {
  isolateThreads.delete(id);
}

/**
 * Takes note of threads born since the last look (nothing while untracked), lowering their
 * priority. Called after an isolate starts work on its thread (the thread exists by then); the
 * periodic sweep is {@link sweepIsolateThreads}.
 */
export function lookForIsolateThreads(force = false): void {
  if (!hostThreads) return;
  const now = Date.now();
  if (!force && now - lastLook < LOOK_EVERY_MS) return;
  lastLook = now;
  const ids = threadIds();
  if (ids) noteThreads(ids);
}

let sweeping = false;

/**
 * {@link lookForIsolateThreads} for the periodic sweep, listing the threads off the main thread:
 * a listing of `/proc/self/task` once took 50 ms there while a large deploy arrived.
 */
export async function sweepIsolateThreads(): Promise<void> {
  if (!hostThreads || sweeping) return;
  sweeping = true;
  try {
    noteThreads(await readdir(TASKS));
  } catch {
    // Threads cannot be listed now: the next sweep tries again.
  } finally {
    sweeping = false;
  }
}

/** Takes note of the threads among `ids` not seen before (see {@link lookForIsolateThreads}). */
function noteThreads(ids: string[]): void {
  if (!hostThreads) return;
  lastLook = Date.now();
  for (const id of ids) {
    if (hostThreads.has(id) || isolateThreads.has(id)) continue;
    // Born with the nice value of the thread that made it: the main thread's, when raised.
    const born = baseNice - mainRaise;
    const wanted = absolute(isolateNice);
    isolateThreads.set(id, born);
    if (wanted !== born && renice(id, wanted)) isolateThreads.set(id, wanted);
  }
  if (isolateThreads.size > 2 * ids.length + 64) {
    const live = new Set(ids);
    for (const id of isolateThreads.keys()) if (!live.has(id)) isolateThreads.delete(id);
  }
}
