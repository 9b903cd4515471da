import type ivm from "isolated-vm";
import type { CpuMeter } from "./cpu-meter.js";
import type { SlotTable } from "./inline/slot-table.js";
import { type IsolateLimits, wallLimitError } from "./limits.js";
import { clockOf } from "./thread-lane.js";
import type { RunningExecution } from "./transport.js";

/** How often the watchdog checks the CPU and wall-clock limits of what runs (ms). */
const WATCHDOG_TICK_MS = 5;
/**
 * Idle ticks the watchdog waits for work handed to the isolate to move its clock before it stops
 * all the same (2 s: a starved isolate thread, below the main thread's priority, may wait long).
 */
const HANDED_WORK_WAIT_TICKS = 400;

/** What the watchdog reads of an isolate, and how it stops it (capsule-isolate.ts). */
export interface Watched {
  readonly isolate: ivm.Isolate;
  readonly running: SlotTable<RunningExecution>;
  readonly meter: CpuMeter;
  readonly limits: IsolateLimits;
  /** isolated-vm disposed the isolate by itself (its memory limit) or the sentinel stopped it. */
  lost(): void;
  /**
   * The isolate used too much CPU: the running execution's, or (`budget`) the isolate's, whoever
   * is charged (see CpuBudget); `stray` when none of its calls is in flight, so none fails for it.
   */
  overran(budget: boolean, stray: boolean): void;
}

/**
 * Ticks while an isolate runs anything: an isolate that isolated-vm disposed (out of memory), then
 * every execution's wall-clock deadline, then the CPU of whoever runs now, and the isolate's CPU
 * whoever it is charged to (its budget: code a handler left running). Memory comes first, so a handler
 * whose heap grew to the limit is reported as such even if a time limit ends in the same tick.
 * It stops on an idle tick whose CPU clock stood still since the one before.
 */
export class IsolateWatchdog {
  private timer: NodeJS.Timeout | null = null;
  /** The CPU clock at the previous idle tick (see quietSinceLastTick). */
  private idleClock: bigint | undefined;
  /** The CPU clock when work was last handed to the isolate ({@link watch}). */
  private handedClock: bigint | undefined;
  /** Idle ticks in a row that found the clock where the one before left it. */
  private stillTicks = 0;

  constructor(private readonly watched: Watched) {}

  /**
   * Watches from now on: work was handed to the isolate (an execution starts, or an answer resumes
   * its code). Until its clock moves, the isolate has not picked that work up: it is not idle.
   */
  watch(): void {
    this.handedClock = clockOf(this.watched.isolate);
    this.idleClock = undefined;
    this.stillTicks = 0;
    this.timer ??= setInterval(this.tick, WATCHDOG_TICK_MS);
  }

  /** Stops watching (the isolate is idle, or freed). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.idleClock = undefined;
    this.stillTicks = 0;
  }

  private readonly tick = (): void => {
    const { isolate, running, meter, limits } = this.watched;
    // Stopped on an idle tick, not after each execution: calls come and go in microseconds.
    if (running.size === 0 && this.quietSinceLastTick()) {
      this.stop();
      return;
    }
    if (isolate.isDisposed) {
      this.watched.lost();
      return;
    }
    const now = Date.now();
    running.forEach((execution) => {
      if (now > execution.deadline) {
        execution.deadline = Number.POSITIVE_INFINITY;
        execution.fail(wallLimitError(limits, execution.waitingCalls > 0));
      }
    });
    if (meter.overran(BigInt(limits.cpuMs) * 1_000_000n)) this.watched.overran(false, false);
    else if (meter.overBudget()) this.watched.overran(true, running.size === 0);
  };

  /**
   * True when nothing runs in the isolate: its CPU clock stood still since the previous idle tick,
   * and moved since work was last handed to it (else that work, an answer that resumes code left
   * running, still waits for its thread: stopping then left that code unwatched), or stood still
   * for {@link HANDED_WORK_WAIT_TICKS} ticks (work that never reached the isolate).
   */
  private quietSinceLastTick(): boolean {
    const clock = clockOf(this.watched.isolate);
    if (clock === undefined) return true;
    this.stillTicks = clock === this.idleClock ? this.stillTicks + 1 : 0;
    this.idleClock = clock;
    if (this.stillTicks === 0) return false;
    return clock !== this.handedClock || this.stillTicks >= HANDED_WORK_WAIT_TICKS;
  }
}
