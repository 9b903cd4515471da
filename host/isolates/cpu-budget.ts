/**
 * One isolate's CPU, whoever it is charged to. Which of a deployment's calls in flight runs at a
 * given moment is known only at the host's hand-overs and the isolate's calls, which it posts
 * without stopping, so CPU may be charged to another of its calls, or to none (a loop left running
 * by a call that ended, resumed and kept going between refused platform calls). The budget bounds
 * it all the same: each call the isolate is sent adds a handler's CPU limit, every stretch it runs
 * takes what it used, and when a call ends what is left is cut to what the calls still in flight
 * may use, plus `strayNs` (the microtasks a call leaves behind). Below zero, the isolate is stopped.
 */
export class CpuBudget {
  private leftNs: bigint;

  constructor(
    private readonly perCallNs: bigint,
    private readonly strayNs: bigint,
  ) {
    this.leftNs = strayNs;
  }

  /** A call was sent to the isolate. */
  granted(): void {
    this.leftNs += this.perCallNs;
  }

  /** The isolate ran `ns`. */
  spent(ns: bigint): void {
    this.leftNs -= ns;
  }

  /**
   * A call ended; `inFlight` calls are left. One that failed (its wall limit) may still be running
   * its code, which unwinds charged to nobody: `unusedNs` of its own limit stays, until the next
   * call ends, rather than come out of the room of the calls in flight.
   */
  ended(inFlight: number, unusedNs = 0n): void {
    const most = BigInt(inFlight) * this.perCallNs + this.strayNs + (unusedNs > 0n ? unusedNs : 0n);
    if (this.leftNs > most) this.leftNs = most;
  }

  /** True when `runningNs` more (the stretch under way) takes the budget below zero. */
  exceededWith(runningNs: bigint): boolean {
    return this.leftNs - runningNs < 0n;
  }
}
