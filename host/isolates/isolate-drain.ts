import type { CapsuleIsolate } from "./capsule-isolate.js";

/**
 * A draining isolate's count against the host's heap budget (see `HeapWatch.drains`): `charge`
 * starts it, `release` ends it (once, whenever it comes). Charging may set the budget's
 * enforcement going at once, which may free the isolate, releasing the count, before it returns.
 */
export interface DrainCount {
  charge(): void;
  release(): void;
}

const NOTHING_COUNTED = (): void => {};

/**
 * A deployment's isolates that calls chose, counted until those calls end, and the one a redeploy
 * replaced while calls still ran in it (see {@link replace}).
 */
export class IsolateDrain {
  /** Calls that chose each isolate and have not ended, by isolate. */
  private readonly holds = new Map<CapsuleIsolate, number>();
  /** The isolate a redeploy replaced while calls still ran in it: freed once they end. */
  private draining: CapsuleIsolate | null = null;
  private uncount: () => void = NOTHING_COUNTED;

  /**
   * Frees `old`, which a new artifact's isolate replaces, once the calls that chose it have ended:
   * they began before the redeploy (their snapshots too) and get the old code's answers, not a
   * `503`. Only one such isolate drains at a time: a second redeploy meanwhile frees the first at
   * once (its calls then fail as `unavailable`), so redeploying in a loop holds no more isolates.
   * While it drains it counts against the host's heap budget through `count`, whose answer ends
   * that: else a developer redeploying each of many deployments with a call held in flight kept
   * one isolate per deployment that no budget saw.
   */
  replace(old: CapsuleIsolate | null, count: (old: CapsuleIsolate) => DrainCount): void {
    // No isolate, or one stopped for a limit: the one draining goes on draining.
    if (!old || old.isDisposed) return;
    this.stop();
    if (!this.holds.has(old)) {
      old.dispose();
      return;
    }
    this.draining = old;
    // Its release is in place before the charge: should the charge have it stopped at once
    // (heap-enforcement.ts), the budget sees it freed before it looks for more to stop.
    const counted = count(old);
    this.uncount = counted.release;
    counted.charge();
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
   * stops it for the host's memory (its calls fail with `out_of_memory`); answers it, if any.
   */
  stop(reason?: "host-memory"): CapsuleIsolate | null {
    const draining = this.draining;
    const uncount = this.uncount;
    this.draining = null;
    this.uncount = NOTHING_COUNTED;
    if (reason) draining?.stop(reason);
    else draining?.dispose();
    uncount();
    return draining;
  }
}
