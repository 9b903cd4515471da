import type ivm from "isolated-vm";
import type { SlotTable } from "./inline/slot-table.js";
import type { RunningExecution } from "./transport.js";

/**
 * Charges an isolate's CPU clock to the executions that ran. The clock is read only at boundaries
 * (the start and end of each execution, each platform call, each inline entry), the only points
 * where user code stops or resumes; the time since the last boundary goes to whoever was running.
 *
 * isolated-vm adds up each finished stretch of the isolate's thread on that thread's own CPU clock,
 * but the stretch running now on a steady clock: a long stretch is measured in wall time until it
 * ends, so a loop on a descheduled thread is charged its waiting too.
 */
export class CpuMeter {
  /** The CPU clock at the last boundary (ns). */
  last = 0n;
  /** Who has been running since then (`null`: the isolate waits on the host). */
  private runningNow: number | null = null;

  constructor(
    private readonly isolate: ivm.Isolate,
    private readonly running: SlotTable<RunningExecution>,
  ) {}

  /** Charges the CPU since the last boundary, then records who runs next. */
  boundary(next: number | null): void {
    const now = this.isolate.isDisposed ? this.last : this.isolate.cpuTime;
    const ran = this.runningNow === null ? undefined : this.running.get(this.runningNow);
    if (ran) ran.cpuNs += now - this.last;
    this.last = now;
    this.runningNow = next;
  }

  /**
   * A crossing in an entry that runs several inline starts: the CPU since the last boundary goes to
   * execution `requestId`, the one crossing back to the host now, which runs on from here.
   */
  crossing(requestId: number): void {
    this.runningNow = requestId;
    this.boundary(requestId);
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
    return (ran?.cpuNs ?? 0n) + (now - this.last) > limitNs;
  }
}
