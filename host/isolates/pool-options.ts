import { totalmem } from "node:os";
import { LIMITS } from "../../sdk/protocol/index.js";
import { DEFAULT_INLINE_POLICY, type InlinePolicy } from "./inline/index.js";
import { DEFAULT_ISOLATE_LIMITS, type IsolateLimits } from "./limits.js";
import { DEFAULT_ISOLATE_NICE } from "./thread-priority.js";

/** How many isolates a host keeps and for how long. */
export interface PoolOptions {
  /** Live isolates at most; the least recently used idle one is evicted beyond this. */
  maxLive: number;
  /** An isolate idle this long is evicted. */
  idleMs: number;
  /** Handlers executing at once across all deployments (the host's execution slots). */
  concurrency: number;
  /**
   * Of those slots, how many only a deployment with nothing running may take (see
   * {@link FairScheduler}): what keeps busy tenants from filling the host.
   */
  reservedSlots: number;
  limits: IsolateLimits;
  /** When handlers run on the host's main thread (see {@link InlinePolicy}). */
  inline: InlinePolicy;
  /**
   * Nice value of isolates' threads (Linux; 0: the host's own priority). See thread-priority.ts for
   * what it buys.
   */
  isolateThreadNice: number;
  /**
   * How many nice values the host's main thread is raised above its other threads, as far as the
   * process is allowed (Linux; 0: not raised). See thread-priority.ts.
   */
  mainThreadNiceRaise: number;
  /**
   * Where the host keeps the V8 code caches its own compiles produced, so that cold starts after a
   * restart skip parsing (a directory of the host's data); null keeps them in memory only.
   */
  codeCacheDir: string | null;
  /** Keep one blank isolate ready for the next cold start (see {@link IsolateFactory}). */
  spareIsolate: boolean;
  /**
   * The live isolates' heaps together (bytes, at their last readings); past it the idle ones of the
   * owner holding most go first (see {@link HeapBudget}).
   */
  maxHeapBytes: number;
}

/**
 * Defaults: 200 live isolates, 5 minutes idle, 256 handlers in flight on the host, a quarter of them
 * kept for deployments with nothing running.
 */
export const DEFAULT_POOL_OPTIONS: PoolOptions = {
  maxLive: 200,
  idleMs: 5 * 60_000,
  concurrency: 256,
  reservedSlots: 64,
  limits: DEFAULT_ISOLATE_LIMITS,
  inline: DEFAULT_INLINE_POLICY,
  isolateThreadNice: DEFAULT_ISOLATE_NICE,
  mainThreadNiceRaise: LIMITS.mainThreadNiceRaise,
  codeCacheDir: null,
  spareIsolate: true,
  maxHeapBytes: Math.floor(machineMemory() / 2),
};

/** The memory the process may use: a container's limit when it has one, else the machine's. */
function machineMemory(): number {
  const constrained = (process as { constrainedMemory?: () => number | undefined }).constrainedMemory?.();
  return constrained && constrained > 0 && constrained < totalmem() ? constrained : totalmem();
}
