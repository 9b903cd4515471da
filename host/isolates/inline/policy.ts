import { movingAverage } from "./moving-average.js";
import { ShareWindow } from "./share-window.js";

/**
 * When a deployment's handlers run inline, on the host's main thread, and when they go back to the
 * isolate's own thread.
 *
 * Inline, the host enters the isolate synchronously (`applySync`) to start a handler and to hand it
 * each platform call's answer, and the isolate posts its calls and its result back synchronously:
 * no thread hand-off at all, which is most of what an isolated request costs otherwise. The price
 * is that the main thread is busy while user code runs, so inline runs are bounded: each entry gets
 * a short CPU slice (enforced by the inline sentinel, see sentinel.ts, which stops the
 * isolate), and a deployment gets a share of the main thread per window. A deployment that
 * overruns either is demoted to its own thread for a cool-down; its inline executions in flight
 * are abandoned and run again there (in a fresh isolate when the sentinel stopped the old one),
 * which is safe because handlers are deterministic and nothing is committed before a handler
 * finishes. The cool-down is short the first time (a light
 * deployment can overrun once, say in a major GC of its heap) and doubles for a deployment
 * demoted again soon after, so a handler that keeps looping costs the main thread one slice per
 * ever longer cool-down.
 */
export interface InlinePolicy {
  /** False: every handler runs on the isolate's own thread. */
  enabled: boolean;
  /**
   * CPU one inline entry may use (ms) before it is stopped and the deployment demoted. Room for a
   * major GC of a small heap (several ms).
   */
  sliceMs: number;
  /** Inline CPU (ms) a deployment may use per window before it is demoted. */
  shareMs: number;
  /** Length of that window (ms). */
  windowMs: number;
  /** How long (ms) a demoted deployment first runs on its own thread before trying inline again. */
  cooldownMs: number;
  /**
   * The longest cool-down (ms). A deployment demoted again within this long after its last
   * cool-down ended gets twice that cool-down, up to this.
   */
  maxCooldownMs: number;
  /**
   * Share of a slice that one entry for several starts of a turn is planned to use, from the
   * deployment's average start: light handlers share an entry, and a heavy one starts alone.
   */
  groupSliceShare: number;
  /** The most starts one entry takes. */
  maxGroup: number;
  /**
   * Demotions the host absorbs before a deployment demoted earlier must wait for the budget to try
   * inline again (see {@link InlineOverrunBudget}).
   */
  overrunBurst: number;
  /** The budget earns one demotion back per this many ms. */
  overrunRefillMs: number;
  /**
   * A handler whose executions use more CPU than this (ms; a moving average over its executions,
   * inline or not) runs on its isolate's own thread until the average falls below half of it.
   * Inline saves a thread hand-off of tens of microseconds, which matters only for light handlers;
   * a heavy one inline holds up every other tenant's requests.
   */
  heavyMs: number;
}

/**
 * Defaults: 20 ms slices, at most half of the main thread per deployment, cool-downs from 1 s
 * doubling up to 1 min, up to 32 starts in one entry planned to use a quarter of a slice, and
 * handlers of over 2 ms on their isolate's thread.
 */
export const DEFAULT_INLINE_POLICY: InlinePolicy = {
  enabled: true,
  sliceMs: 20,
  shareMs: 500,
  windowMs: 1000,
  cooldownMs: 1000,
  maxCooldownMs: 60_000,
  groupSliceShare: 0.25,
  maxGroup: 32,
  overrunBurst: 8,
  overrunRefillMs: 2000,
  heavyMs: 2,
};

/**
 * The host's budget of inline overruns, shared by every deployment. Each demotion spends one; one
 * comes back per {@link InlinePolicy.overrunRefillMs}. A deployment demoted before goes back inline
 * after its cool-down only while the budget is not spent, so many hostile deployments cost the main
 * thread about one slice each, once, and then one slice per refill between them, instead of one
 * slice each per cool-down. Deployments never demoted do not wait for it.
 */
export class InlineOverrunBudget {
  private left: number;
  private refilledAt = Date.now();

  constructor(private readonly policy: InlinePolicy) {
    this.left = policy.overrunBurst;
  }

  /** True when a deployment demoted before may try inline again. */
  get open(): boolean {
    this.refill();
    return this.left > 0;
  }

  /** Counts one demotion; the debt is bounded so that the budget recovers within a burst of refills. */
  spend(): void {
    this.refill();
    this.left = Math.max(-this.policy.overrunBurst, this.left - 1);
  }

  private refill(): void {
    const earned = Math.floor((Date.now() - this.refilledAt) / this.policy.overrunRefillMs);
    if (earned <= 0) return;
    this.left = Math.min(this.policy.overrunBurst, this.left + earned);
    this.refilledAt += earned * this.policy.overrunRefillMs;
  }
}

/**
 * The cool-down of a demotion at `now`: the first one, or twice the last one (capped) when the
 * deployment is demoted again within {@link InlinePolicy.maxCooldownMs} after that one ended.
 */
export function nextCooldownMs(
  policy: InlinePolicy,
  last: { endedAt: number; cooldownMs: number } | null,
  now: number,
): number {
  if (!last || now - last.endedAt >= policy.maxCooldownMs) return policy.cooldownMs;
  return Math.min(policy.maxCooldownMs, Math.max(policy.cooldownMs, last.cooldownMs * 2));
}

/** Handlers whose average CPU a deployment's standing keeps; beyond it the oldest is forgotten. */
const HANDLERS_KEPT = 1024;
/** Heavy handlers a deployment must have, and most of its measured ones, for a new one to start heavy. */
const HEAVY_HANDLERS_TO_DOUBT = 3;

/**
 * A deployment's standing for inline runs: whether it is demoted now, its last cool-down, and its
 * inline CPU in the current share window. Kept by the deployment's runner across its isolates, so
 * the fresh isolate that replaces a stopped one is still demoted.
 */
export class InlineStanding {
  /** No inline runs before this time (ms since epoch). */
  private inlineAfter = 0;
  /** The last demotion's cool-down (ms), which the next one doubles if it comes soon. */
  private lastCooldownMs = 0;
  /** The deployment's inline CPU in the current share window. */
  private readonly window: ShareWindow;
  /** {@link InlinePolicy.shareMs} in nanoseconds, the unit of the CPU clock charged per entry. */
  private readonly shareNs: bigint;
  /**
   * Each handler's CPU per execution, a moving average in nanoseconds, and whether it is heavy:
   * over {@link InlinePolicy.heavyMs}, and until it falls below half of it.
   */
  private readonly handlers = new Map<string, { averageNs: number; heavy: boolean }>();
  /** How many of {@link handlers} are heavy now (see {@link heavy}). */
  private heavyHandlers = 0;

  constructor(
    readonly policy: InlinePolicy = DEFAULT_INLINE_POLICY,
    /** The host's budget of demotions (one of its own when the deployment is alone). */
    private readonly budget: InlineOverrunBudget = new InlineOverrunBudget(policy),
    /**
     * The share window of the developer the deployment belongs to now, all their deployments
     * together (none for an unclaimed deployment, which counts alone).
     */
    private readonly ownerWindow: () => ShareWindow | undefined = () => undefined,
  ) {
    this.shareNs = BigInt(policy.shareMs) * 1_000_000n;
    this.window = new ShareWindow(policy.windowMs);
  }

  /**
   * True when the deployment may run inline now: not in a cool-down, and when demoted lately, while
   * the host's budget of demotions is open. A demotion with no other within
   * {@link InlinePolicy.maxCooldownMs} after its end is forgotten, as {@link nextCooldownMs} forgets
   * it: kept for good, a tenant demoted once (a collection at the wrong time) depended on the budget
   * as long as its process lived, which other tenants' overruns could keep empty.
   */
  get allowed(): boolean {
    if (!this.policy.enabled) return false;
    const now = Date.now();
    if (now < this.inlineAfter) return false;
    if (this.lastCooldownMs !== 0 && now - this.inlineAfter >= this.policy.maxCooldownMs)
      this.lastCooldownMs = 0;
    return this.lastCooldownMs === 0 || this.budget.open;
  }

  /**
   * True when `handler` (a kind and a name: see `handlerKey`) runs on the isolate's own thread for
   * its weight. A handler not measured yet is heavy when most of the deployment's measured ones
   * are, {@link HEAVY_HANDLERS_TO_DOUBT} at least: taken as light, a capsule of a thousand handlers
   * each spinning 14 ms ran each one's first execution inline, and one deployment calling them in
   * turn held the main thread for good.
   */
  heavy(handler: string): boolean {
    const kept = this.handlers.get(handler);
    if (kept) return kept.heavy;
    return this.heavyHandlers >= HEAVY_HANDLERS_TO_DOUBT && this.heavyHandlers * 2 > this.handlers.size;
  }

  /** Inline CPU (ns) the deployment used in the current share window: the main thread's lightest go first. */
  get recentNs(): number {
    return Math.max(this.window.recentNs, this.ownerWindow()?.recentNs ?? 0);
  }

  /** Folds one finished execution's CPU (inline or on the isolate's thread) into its handler's average. */
  noteExecution(handler: string, cpuNs: bigint): void {
    const ns = Number(cpuNs);
    let kept = this.handlers.get(handler);
    if (!kept) {
      if (this.handlers.size >= HANDLERS_KEPT) {
        const [oldest, forgotten] = this.handlers.entries().next().value as [string, { heavy: boolean }];
        this.handlers.delete(oldest);
        if (forgotten.heavy) this.heavyHandlers--;
      }
      kept = { averageNs: 0, heavy: false };
      this.handlers.set(handler, kept);
    }
    kept.averageNs = movingAverage(kept.averageNs, ns);
    const heavyNs = this.policy.heavyMs * 1e6;
    const was = kept.heavy;
    if (kept.averageNs > heavyNs) kept.heavy = true;
    else if (kept.averageNs < heavyNs / 2) kept.heavy = false;
    if (kept.heavy !== was) this.heavyHandlers += kept.heavy ? 1 : -1;
  }

  /** Sends the deployment to its own thread for a cool-down. */
  demote(): void {
    const now = Date.now();
    const last =
      this.lastCooldownMs > 0 ? { endedAt: this.inlineAfter, cooldownMs: this.lastCooldownMs } : null;
    this.lastCooldownMs = nextCooldownMs(this.policy, last, now);
    this.inlineAfter = now + this.lastCooldownMs;
    this.window.clear();
    this.budget.spend();
  }

  /**
   * Counts inline CPU against the deployment's share and its developer's (all their deployments
   * together: twenty deployments of one developer each under its share held the main thread); true
   * when either went over, and the deployment was demoted. The developer's count is not cleared:
   * each of their deployments that charges in the same window is demoted too.
   */
  charge(ns: bigint): boolean {
    const own = this.window.add(ns);
    const owners = this.ownerWindow()?.add(ns) ?? 0n;
    if (own <= this.shareNs && owners <= this.shareNs) return false;
    this.demote();
    return true;
  }
}
