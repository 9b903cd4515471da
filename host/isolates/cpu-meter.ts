import type ivm from "isolated-vm";
import { LIMITS } from "../../sdk/protocol/index.js";
import { CpuBudget } from "./cpu-budget.js";
import type { SlotTable } from "./inline/slot-table.js";
import { isolateCpuClock } from "./isolate-cpu-clock.js";
import type { RunningExecution } from "./transport.js";

/**
 * Inline entries whose figure is below this (ns) are charged it as it is: checking the main
 * thread's own CPU costs a few microseconds, and a discount below this would not matter.
 */
const INLINE_CPU_CHECK_FROM_NS = 500_000n;

/**
 * Charges an isolate's CPU clock to the executions that ran. The clock is read only at boundaries
 * (the start and end of each execution, each platform call, each inline entry), the only points
 * where user code stops or resumes; the time since the last boundary goes to whoever was running.
 *
 * isolated-vm measures the stretches an isolate runs on a steady clock, so a thread that waits for
 * a core (a lower priority, a busy machine) would be charged its waiting too. On the isolate's own
 * thread a stretch is therefore charged the lesser of that figure and the time on
 * {@link isolateCpuClock}, which leaves the waiting out; an inline entry, on the host's main
 * thread, the lesser of its figure and the main thread's CPU in it ({@link endInlineEntry}).
 */
export class CpuMeter {
  /** The CPU clock at the last boundary (ns). */
  last = 0n;
  /** {@link isolateCpuClock} at the last boundary (ns). */
  private lastShared = 0n;
  /** Who has been running since then (`null`: the isolate waits on the host). */
  private runningNow: number | null = null;
  /** True between {@link beginInlineEntry} and {@link endInlineEntry}. */
  private inEntry = false;
  /** What each stretch of the inline entry open now was charged, and to whom. */
  private readonly entryCharges: Array<{ execution: RunningExecution; ns: bigint }> = [];
  /** What the isolate may still use, whoever is charged (see {@link CpuBudget}). */
  readonly budget: CpuBudget;

  constructor(
    private readonly isolate: ivm.Isolate,
    private readonly running: SlotTable<RunningExecution>,
    /** A handler's CPU limit (ms): what each call adds to the {@link budget}. */
    cpuMs: number = LIMITS.handlerCpuMs,
    /** The clock of isolates' threads' time on a core (tests give their own). */
    private readonly sharedClock: () => bigint = isolateCpuClock,
  ) {
    // What loading the capsule used is nobody's.
    this.last = isolate.cpuTime;
    this.budget = new CpuBudget(BigInt(cpuMs) * 1_000_000n, BigInt(LIMITS.strayCpuMs) * 1_000_000n);
  }

  /**
   * Charges the CPU since the last boundary, then records who runs next. The shared clock is read
   * only when a stretch on the isolate's own thread is charged or starts: a reading may take a
   * sample (a file of `/proc` per isolate thread, about 0.3 ms), which an inline entry, on the main
   * thread, has no use for, nor an idle isolate's boundary, such as an inline call's end after the
   * host was idle. Its last reading then stays, older: a stray stretch charged against it later is
   * discounted less, never more.
   */
  boundary(next: number | null): void {
    let now = this.isolate.isDisposed ? this.last : this.isolate.cpuTime;
    // Never backwards: a clock that went back would credit the budget.
    if (now < this.last) now = this.last;
    const ran = this.runningNow === null ? undefined : this.running.get(this.runningNow);
    const following = next === null ? undefined : this.running.get(next);
    const inline =
      this.inEntry || ran?.transport.ownThread === false || following?.transport.ownThread === false;
    const idle = ran === undefined && now === this.last && following === undefined;
    const shared = inline || idle ? this.lastShared : this.sharedClock();
    if (ran) {
      const ns = this.used(ran, now, shared);
      ran.cpuNs += ns;
      this.budget.spent(ns);
      if (this.inEntry) this.entryCharges.push({ execution: ran, ns });
    } else if (now > this.last) this.budget.spent(inline ? now - this.last : this.ownThreadUsed(now, shared));
    this.last = now;
    this.lastShared = shared;
    this.runningNow = next;
  }

  /**
   * What `ran` used since the last boundary: the isolate's own figure, or on the isolate's own
   * thread the lesser of it and the time on {@link isolateCpuClock}.
   */
  private used(ran: RunningExecution, now: bigint, shared: bigint): bigint {
    return ran.transport.ownThread ? this.ownThreadUsed(now, shared) : now - this.last;
  }

  /** What a stretch on the isolate's own thread used since the last boundary (see {@link used}). */
  private ownThreadUsed(now: bigint, shared: bigint): bigint {
    const measured = now - this.last;
    const onClock = shared - this.lastShared;
    return onClock > 0n && onClock < measured ? onClock : measured;
  }

  /**
   * Starts an inline entry: charges the CPU since the last boundary as {@link boundary} does, with
   * `next` running, then records what each stretch of the entry is charged, so that
   * {@link endInlineEntry} can take a discount off all of them. Returns the clock at the start.
   */
  beginInlineEntry(next: number | null): bigint {
    this.boundary(next);
    this.entryCharges.length = 0;
    this.inEntry = true;
    return this.last;
  }

  /**
   * Ends the inline entry that began when the clock read `entryStart` (see
   * {@link beginInlineEntry}): charges the last stretch as {@link boundary} does. When the entry's
   * figure is at least {@link INLINE_CPU_CHECK_FROM_NS} and `cpuSinceStart()` (the main thread's
   * own CPU since the entry began, an upper bound; see inline/thread-cpu.ts) says less, every
   * stretch of the entry is charged that much less in proportion: the host may have been held in
   * any of them, and an entry for a group of starts would otherwise charge one execution the wait
   * of all. Returns what the entry is charged in all.
   */
  endInlineEntry(entryStart: bigint, cpuSinceStart: () => number | undefined): bigint {
    this.boundary(null);
    this.inEntry = false;
    const measured = this.last - entryStart;
    const cpuNs = measured < INLINE_CPU_CHECK_FROM_NS ? undefined : cpuSinceStart();
    const used = cpuNs === undefined || BigInt(cpuNs) >= measured ? measured : BigInt(Math.max(0, cpuNs));
    if (used < measured) {
      const excess = measured - used;
      for (const { execution, ns } of this.entryCharges) execution.cpuNs -= (ns * excess) / measured;
      this.budget.spent(-excess);
    }
    this.entryCharges.length = 0;
    return used;
  }

  /**
   * Charges the stretch under way to whoever runs now, who still runs: an execution that failed
   * (its wall limit) is charged what it used before the budget is cut as it ends.
   */
  catchUp(): void {
    this.boundary(this.runningNow);
  }

  /** True when the isolate is past its {@link budget}, the stretch under way included. */
  overBudget(): boolean {
    if (this.budget.exceededWith(0n)) return true;
    let now: bigint;
    try {
      now = this.isolate.cpuTime;
    } catch {
      return false;
    }
    if (now <= this.last || !this.budget.exceededWith(now - this.last)) return false;
    return this.budget.exceededWith(this.ownThreadUsed(now, this.sharedClock()));
  }

  /** True when the execution running now has used more than `limitNs`, its current stretch included. */
  overran(limitNs: bigint): boolean {
    let now: bigint;
    try {
      now = this.isolate.cpuTime;
    } catch {
      // isolated-vm disposed the isolate on its own thread just now; the next tick sees it gone.
      return false;
    }
    const ran = this.runningNow === null ? undefined : this.running.get(this.runningNow);
    if (!ran) return false;
    // The cheap figure first: the clock is read only when the isolate's own says over.
    if (ran.cpuNs + (now - this.last) <= limitNs) return false;
    return ran.cpuNs + this.used(ran, now, this.sharedClock()) > limitNs;
  }
}
