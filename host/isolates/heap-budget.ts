import { LIMITS } from "../../sdk/protocol/index.js";
import type { CapsuleIsolate } from "./capsule-isolate.js";
import type { DrainCount } from "./isolate-drain.js";

/** How often an isolate whose calls run inline has its heap read, at most (ms). */
const WEIGH_INLINE_EVERY_MS = 1000;

/**
 * What every live isolate of a host held at its last reading, together, against the most the
 * operator allows ({@link PoolOptions.maxHeapBytes}): past it, `over` is told, and the pool evicts
 * idle isolates until they fit (isolate-pool.ts). Each isolate is held to its own memory limit,
 * but one developer's hundred deployments, each keeping 120 MiB of state between calls, grew the
 * host by 12 GiB and the machine's memory ran out for every tenant.
 */
export class HeapBudget {
  private total = 0;

  constructor(
    readonly maxBytes: number,
    private readonly over: () => void,
  ) {}

  /** Bytes the live isolates held at their last readings. */
  get bytes(): number {
    return this.total;
  }

  /** One isolate's reading moved by `delta` bytes. */
  moved(delta: number): void {
    this.total += delta;
    if (delta > 0 && this.total > this.maxBytes) this.over();
  }
}

/**
 * Whether `bytes`, read after a call on `isolate`'s own thread, are above LIMITS.breachHeapShare of
 * its memory limit, garbage included: such a call counts as a stop (see
 * `DeploymentLane.markBreached`). A handler that allocates most of its heap and returns just before
 * the limit churns memory as one that breaches does, and twenty of them would otherwise run twenty
 * such threads at once.
 */
export function nearMemoryLimit(bytes: number, isolate: CapsuleIsolate): boolean {
  return bytes > isolate.limits.memoryMb * 1024 * 1024 * LIMITS.breachHeapShare;
}

/**
 * A deployment's share of the {@link HeapBudget}: its live isolate's heap (used and external, the
 * garbage not yet collected included) at the last reading, and the memory limit of an isolate a
 * redeploy replaced while calls still ran in it ({@link HeapWatch.drains}). The heap is read on
 * the isolate's thread after each call that ran there, and after one that ran inline, or while
 * calls run, at most once a second.
 */
export class HeapWatch {
  private known = 0;
  /** What the isolates a redeploy replaced while calls ran in them count for (see {@link drains}). */
  private draining = 0;
  private watched: CapsuleIsolate | null = null;
  private weighing = false;
  /** A reading after a call on its own thread came while another was under way: taken after it. */
  private ownThreadReadingDue = false;
  private weighedAt = 0;

  constructor(
    private readonly budget: HeapBudget | null,
    /** Told each reading of the isolate watched, and whether the call before it ran on its own thread. */
    private readonly weighed: (bytes: number, isolate: CapsuleIsolate, onOwnThread: boolean) => void,
  ) {}

  /** Bytes the deployment counts for: its live isolate's last reading, and what a draining one counts for. */
  get bytes(): number {
    return this.known + this.draining;
  }

  /** Bytes the deployment's live isolate held at its last reading (0: none live, or not read yet). */
  get liveBytes(): number {
    return this.known;
  }

  /**
   * The watched isolate goes on running the calls in flight in it while another replaces it (a
   * redeploy: isolate-drain.ts). Nothing reads it from now on, and its calls may still grow it, so
   * it counts for its memory limit, `limitBytes` (its last reading if more), from the count's
   * charge to its release.
   */
  drains(limitBytes: number): DrainCount {
    const bytes = Math.max(limitBytes, this.known);
    this.watch(null);
    let state: "made" | "charged" | "released" = "made";
    return {
      charge: () => {
        if (state !== "made") return;
        state = "charged";
        this.draining += bytes;
        this.budget?.moved(bytes);
      },
      release: () => {
        const was = state;
        state = "released";
        if (was !== "charged") return;
        this.draining -= bytes;
        this.budget?.moved(-bytes);
      },
    };
  }

  /** From now on `isolate` (null: none) is the deployment's live one; the last reading goes. */
  watch(isolate: CapsuleIsolate | null): void {
    this.watched = isolate;
    this.ownThreadReadingDue = false;
    this.set(0);
  }

  /** A call of the watched isolate ended: reads its heap when due. */
  afterCall(isolate: CapsuleIsolate, onOwnThread: boolean): void {
    this.read(isolate, onOwnThread);
  }

  /**
   * Calls run in the watched isolate: reads its heap when due. A call that keeps memory and then
   * waits (on a platform call, or a promise that never settles) would otherwise hold it unread
   * until its wall-clock limit.
   */
  whileBusy(isolate: CapsuleIsolate): void {
    this.read(isolate, false);
  }

  private read(isolate: CapsuleIsolate, onOwnThread: boolean): void {
    if (isolate !== this.watched) return;
    if (this.weighing) {
      // Not dropped: the reading after a call on its own thread decides whether the call counts
      // as a breach (isolate-keeper.ts), and one taken while calls ran does not.
      if (onOwnThread) this.ownThreadReadingDue = true;
      return;
    }
    const now = Date.now();
    if (!onOwnThread && now - this.weighedAt < WEIGH_INLINE_EVERY_MS) return;
    this.weighedAt = now;
    // Read on the isolate's thread, even after an inline call: read here, code left running there
    // (a stray promise chain, until its budget stops it) would hold the host's main thread.
    this.weighing = true;
    isolate
      .heapBytes()
      .then(
        (bytes) => this.took(isolate, bytes, onOwnThread),
        () => {},
      )
      .finally(() => {
        this.weighing = false;
        if (this.ownThreadReadingDue) {
          this.ownThreadReadingDue = false;
          this.read(isolate, true);
        }
      });
  }

  /** Takes a reading of `isolate`, unless it was replaced or is gone meanwhile (then it is no one's). */
  private took(isolate: CapsuleIsolate, bytes: number, onOwnThread: boolean): void {
    if (isolate !== this.watched || isolate.isDisposed) return;
    this.set(bytes);
    // The budget may have evicted or stopped it for this very reading.
    if (isolate === this.watched) this.weighed(bytes, isolate, onOwnThread);
  }

  private set(bytes: number): void {
    const delta = bytes - this.known;
    this.known = bytes;
    if (delta !== 0) this.budget?.moved(delta);
  }
}
