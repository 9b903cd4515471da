import type ivm from "isolated-vm";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { CpuMeter } from "./cpu-meter.js";
import type { SlotTable } from "./inline/slot-table.js";
import { type IsolateLimits, wallLimitError } from "./limits.js";
import type { RunningExecution } from "./transport.js";

/** How often the watchdog checks the CPU and wall-clock limits of what runs (ms). */
const WATCHDOG_TICK_MS = 5;

/** What the watchdog reads of an isolate, and how it stops it (capsule-isolate.ts). */
export interface Watched {
  readonly isolate: ivm.Isolate;
  readonly running: SlotTable<RunningExecution>;
  readonly meter: CpuMeter;
  readonly limits: IsolateLimits;
  /** isolated-vm disposed the isolate by itself (its memory limit) or the sentinel stopped it. */
  lost(): void;
  /** The isolate used too much CPU: `stray` when none of its calls was running (see CpuMeter.strayOver). */
  overran(stray: boolean): void;
}

/**
 * Ticks while an isolate runs anything: an isolate that isolated-vm disposed (out of memory), then
 * every execution's wall-clock deadline, then the CPU of whoever runs now, and the CPU used while
 * no call runs (code a handler left running after its answer). Memory comes first, so a handler
 * whose heap grew to the limit is reported as such even if a time limit ends in the same tick.
 * It stops on an idle tick whose CPU clock stood still since the one before.
 */
export class IsolateWatchdog {
  private timer: NodeJS.Timeout | null = null;
  /** The CPU clock at the previous idle tick (see quietSinceLastTick). */
  private idleClock: bigint | undefined;

  constructor(private readonly watched: Watched) {}

  /** Watches from now on (an execution starts, or an answer resumes the isolate's code). */
  watch(): void {
    this.timer ??= setInterval(this.tick, WATCHDOG_TICK_MS);
  }

  /** Stops watching (the isolate is freed). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.idleClock = undefined;
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
    if (meter.overran(BigInt(limits.cpuMs) * 1_000_000n)) this.watched.overran(false);
    else if (meter.strayOver(BigInt(LIMITS.strayCpuMs) * 1_000_000n)) this.watched.overran(true);
  };

  /** True when the isolate's CPU clock stood still since the previous idle tick: nothing runs in it. */
  private quietSinceLastTick(): boolean {
    let clock: bigint;
    try {
      clock = this.watched.isolate.cpuTime;
    } catch {
      return true;
    }
    const quiet = clock === this.idleClock;
    this.idleClock = clock;
    return quiet;
  }
}
