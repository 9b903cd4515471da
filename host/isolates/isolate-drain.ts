import type { CapsuleIsolate } from "./capsule-isolate.js";

/**
 * A deployment's isolates that calls chose, counted until those calls end, and the one a redeploy
 * replaced while calls still ran in it (see {@link replace}).
 */
export class IsolateDrain {
  /** Calls that chose each isolate and have not ended, by isolate. */
  private readonly holds = new Map<CapsuleIsolate, number>();
  /** The isolate a redeploy replaced while calls still ran in it: freed once they end. */
  private draining: CapsuleIsolate | null = null;

  /**
   * Frees `old`, which a new artifact's isolate replaces, once the calls that chose it have ended:
   * they began before the redeploy (their snapshots too) and get the old code's answers, not a
   * `503`. Only one such isolate drains at a time: a second redeploy meanwhile frees the first at
   * once (its calls then fail as `unavailable`), so redeploying in a loop holds no more isolates.
   */
  replace(old: CapsuleIsolate | null): void {
    // No isolate, or one stopped for a limit: the one draining goes on draining.
    if (!old || old.isDisposed) return;
    this.draining?.dispose();
    this.draining = null;
    if (this.holds.has(old)) this.draining = old;
    else old.dispose();
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
      if (this.draining === isolate) {
        this.draining = null;
        isolate.dispose();
      }
    };
  }

  /** Frees the isolate draining at once (a deleted deployment, a closing host): its calls fail. */
  stop(): void {
    this.draining?.dispose();
    this.draining = null;
  }
}
