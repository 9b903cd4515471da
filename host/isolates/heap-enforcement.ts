import { HeapBudget } from "./heap-budget.js";
import type { IsolateKeeper } from "./isolate-keeper.js";
import { evictHeaviestOwnersFirst } from "./owner-eviction.js";

/** How often isolates with calls in flight have their heaps read, at most (ms). */
const WEIGH_BUSY_EVERY_MS = 1000;

/** Idle isolates are evicted until the live ones hold this share of the budget. */
const EVICT_DOWN_TO = 0.9;

/**
 * Holds the live isolates' heaps to the operator's budget ({@link HeapBudget}). Past it, idle
 * isolates are evicted, the least recently used of the developer holding most first, until the
 * heaps hold 90% of it. When that is not enough because the heaviest developer's isolates are all
 * busy, their isolates are stopped, the heaviest first, calls in flight and all, until the heaps
 * fit: one developer's deployments, each keeping 16 MiB and then waiting on a call that never
 * answered, were never idle and never read, and held the host past its budget for as long as they
 * kept calling. A developer within an even share of the budget loses nothing either way.
 */
export class HeapEnforcement {
  readonly budget: HeapBudget;
  private readonly weigher: NodeJS.Timeout;

  constructor(
    maxBytes: number,
    /** The host's runners, least recently used first. */
    private readonly runners: () => Iterable<IsolateKeeper>,
    /** Whom a runner's isolate counts against: a developer, or an unclaimed deployment alone. */
    private readonly ownerOf: (runner: IsolateKeeper) => string,
    /** Evicts an idle runner's isolate, counted as an eviction for memory. */
    private readonly evictIdle: (runner: IsolateKeeper) => void,
  ) {
    this.budget = new HeapBudget(maxBytes, () => this.enforce());
    this.weigher = setInterval(() => {
      for (const runner of this.runners()) if (runner.busy) runner.weighWhileBusy();
    }, WEIGH_BUSY_EVERY_MS);
    this.weigher.unref();
  }

  private enforce(): void {
    // Readings of isolates gone by other means (isolated-vm at their own limit, the inline
    // sentinel) would count against nobody's share and get other developers' isolates stopped.
    for (const runner of this.runners()) runner.forgetGoneHeap();
    const budget = this.budget;
    const ownerOf = this.ownerOf;
    const weightOf = (runner: IsolateKeeper) => runner.heap.bytes;
    evictHeaviestOwnersFirst(this.runners(), {
      ownerOf,
      weightOf,
      budget: budget.maxBytes,
      over: () => budget.bytes > budget.maxBytes * EVICT_DOWN_TO,
      evict: this.evictIdle,
      weighsDraining: true,
    });
    evictHeaviestOwnersFirst(this.runners(), {
      ownerOf,
      weightOf,
      budget: budget.maxBytes,
      over: () => budget.bytes > budget.maxBytes,
      evict: (runner) => runner.stopForHostMemory(),
      busy: true,
      weighsDraining: true,
    });
  }

  close(): void {
    clearInterval(this.weigher);
  }
}
