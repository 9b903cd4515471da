import { CapsuleIsolate } from "./capsule-isolate.js";
import type { CodeCache } from "./code-cache.js";
import {
  DEFAULT_INLINE_POLICY,
  type InlinePolicy,
  InlineSentinel,
  type InlineStanding,
} from "./inline/index.js";
import { type BlankIsolate, createBlankIsolate, type LoadFrom } from "./isolate-loader.js";
import type { IsolateLimits } from "./limits.js";
import { warmRuntimeCache } from "./runtime-warm-up.js";

/** How long after a cold start the next spare is made (ms). */
const SPARE_DELAY_MS = 20;

/**
 * Makes a host's capsule isolates: every compile goes through the host's {@link CodeCache}, and a
 * cold start takes a blank isolate made ahead of time when one is ready (isolate, context and
 * runtime are most of a cold start's time; the capsule's compile and first run are the rest). A
 * blank isolate has run no tenant code and serves one deployment only; the next is made after a
 * cold start is done, off its path. One spare costs an idle isolate's memory (about 1 MB).
 */
export class IsolateFactory {
  private spare: BlankIsolate | null = null;
  /** The runtime's code cache warm-up, once per factory. */
  private warmed: Promise<void> | undefined;
  /** The refill under way (warm-up, then the spare); undefined when none is. */
  private refilling: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly limits: IsolateLimits,
    readonly codeCache: CodeCache,
    /** Whether to keep a blank isolate ready. */
    private readonly keepSpare: boolean,
    /** The host's inline policy, which the runtime warm-up's call follows as a first call would. */
    private readonly inlinePolicy: InlinePolicy = DEFAULT_INLINE_POLICY,
  ) {}

  /**
   * An isolate running `code` (content hash `artifact`) for a deployment of `standing`, named by
   * `whom.scope` (id and incarnation) and `whom.tenant` when known: see loadIsolate.
   */
  async create(
    code: string,
    artifact: string,
    standing: InlineStanding,
    whom: Pick<LoadFrom, "scope" | "tenant"> = {},
  ): Promise<CapsuleIsolate> {
    const blank = this.take();
    try {
      return await CapsuleIsolate.create(code, artifact, this.limits, standing, {
        cache: this.codeCache,
        ...(blank ? { blank } : {}),
        ...whom,
      });
    } finally {
      // Taken by the new isolate's inline transport, unless the capsule failed to load or the
      // deployment's inline policy differs: then the sentinel stops watching it here.
      if (blank) InlineSentinel.shared().releaseAhead(blank.isolate);
      // After this cold start's first request, not beside it: on a busy machine the spare's making
      // (an isolate thread and the main thread) slowed that request down by as much as it saved.
      setTimeout(() => this.refill(), SPARE_DELAY_MS).unref();
    }
  }

  /** True when a blank isolate is ready for the next cold start. */
  get spareReady(): boolean {
    return this.spare !== null && !this.spare.isolate.isDisposed;
  }

  /**
   * Makes the spare (none until the host's first cold start: start-up stays lazy), after warming
   * the runtime's code cache the first time (runtime-warm-up.ts), so the spare's runtime comes from it.
   */
  private refill(): void {
    if (!this.keepSpare || this.closed || this.refilling || this.spare) return;
    this.warmed ??= warmRuntimeCache(this.limits, this.codeCache, this.inlinePolicy).catch(() => {});
    this.refilling = this.warmed
      .then(() => (this.closed ? undefined : createBlankIsolate(this.limits, this.codeCache)))
      .then((blank) => {
        if (this.closed) blank?.isolate.dispose();
        else if (blank) {
          // Watched from now on, off any request's path (see InlineSentinel.registerAhead).
          if (this.inlinePolicy.enabled)
            InlineSentinel.shared().registerAhead(blank.isolate, this.inlinePolicy.sliceMs);
          this.spare = blank;
        }
      })
      .catch(() => {})
      .finally(() => {
        this.refilling = undefined;
      });
  }

  private take(): BlankIsolate | undefined {
    const spare = this.spare;
    this.spare = null;
    if (spare === null) return undefined;
    if (!spare.isolate.isDisposed) return spare;
    InlineSentinel.shared().releaseAhead(spare.isolate);
    return undefined;
  }

  /** Frees the spare; makes no more. */
  close(): void {
    this.closed = true;
    const spare = this.take();
    if (!spare) return;
    InlineSentinel.shared().releaseAhead(spare.isolate);
    spare.isolate.dispose();
  }

  /**
   * Resolves once the work started before {@link close} is over: the warm-up or the spare being made
   * (an isolate still working on its thread when the process exits can crash it) and the code
   * cache's file writes (a host's data folder may be removed next).
   */
  async settled(): Promise<void> {
    await this.refilling;
    await this.codeCache.settled();
  }
}
