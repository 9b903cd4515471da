import type { CapsuleIsolate } from "./capsule-isolate.js";

/** Ends the count of a draining isolate against the host's heap budget (see `HeapWatch.drains`). */
export type Uncount = () => void;

const NOTHING_COUNTED: Uncount = () => {};

/**
 * A deployment's isolates that calls chose, counted until those calls end, and the one a redeploy
 * replaced while calls still ran in it (see {@link replace}).
 */
export class IsolateDrain {
  /** Calls that chose each isolate and have not ended, by isolate. */
  private readonly holds = new Map<CapsuleIsolate, number>();
  /** The isolate a redeploy replaced while calls still ran in it: freed once they end. */
  private draining: CapsuleIsolate | null = null;
  private uncount: Uncount = NOTHING_COUNTED;

  /**
   * Frees `old`, which a new artifact's isolate replaces, once the calls that chose it have ended:
   * they began before the redeploy (their snapshots too) and get the old code's answers, not a
   * `503`. Only one such isolate drains at a time: a second redeploy meanwhile frees the first at
   * once (its calls then fail as `unavailable`), so redeploying in a loop holds no more isolates.
   * While it drains it counts against the host's heap budget through `count`, whose answer ends
   * that: else a developer redeploying each of many deployments with a call held in flight kept
   * one isolate per deployment that no budget saw.
   */
  replace(old: CapsuleIsolate | null, count: (old: CapsuleIsolate) => Uncount = () => NOTHING_COUNTED): void {
    // No isolate, or one stopped for a limit: the one draining goes on draining.
    if (!old || old.isDisposed) return;
    this.stop();
    if (!this.holds.has(old)) {
      old.dispose();
      return;
    }
    this.draining = old;
    const uncount = count(old);
    // Counted past the budget, it may have been stopped at once (heap-enforcement.ts).
    if (this.draining === old) this.uncount = uncount;
    else uncount();
  }

  /** Counts a call that chose `isolate` until the function returned is called (see {@link replace}). */
  hold(isolate: CapsuleIsolate): () => void {
    this.holds.set(isolate, (this.holds.get(isolate) ?? 0) + 1);
    return () => {
      const left = (this.holds.get(isolate) ?? 1) - 1;
      if (left > 0) {
        this.holds.set(isolate, left);
        return;
      }
      this.holds.delete(isolate);
      if (this.draining === isolate) this.stop();
    };
  }

  /**
   * Frees the isolate draining at once (a deleted deployment, a closing host: its calls fail), or
   * stops it for the host's memory (its calls fail with `out_of_memory`).
   */
  stop(reason?: "host-memory"): void {
    const draining = this.draining;
    const uncount = this.uncount;
    this.draining = null;
    this.uncount = NOTHING_COUNTED;
    if (reason) draining?.stop(reason);
    else draining?.dispose();
    uncount();
  }
}
