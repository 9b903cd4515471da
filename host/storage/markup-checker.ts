import { LIMITS } from "../../sdk/protocol/index.js";
import { WorkerQueue, type WorkerQueueLimits } from "../threads/worker-queue.js";

/** How much the checker takes on. */
export interface MarkupCheckLimits {
  /** How long one check may run before its thread is ended. */
  checkMs: number;
  /** Bytes of files waiting or being checked, all queues together. */
  queueBytes: number;
  /** Bytes of files waiting or being checked, one queue (a deployment's). */
  queueBytesEach: number;
}

const DEFAULT_LIMITS: MarkupCheckLimits = {
  checkMs: LIMITS.markupCheckMs,
  queueBytes: LIMITS.markupCheckQueueBytes,
  queueBytesEach: LIMITS.markupCheckQueueBytesEach,
};

/**
 * Runs the SVG and XML script check (markup-script.ts) on a thread of its own, one file at a
 * time: on the main thread a 250 KB file held every tenant's requests 5 s while the check was
 * quadratic, and a linear check still takes it up to 200 ms for 5 MB. Files wait in queues (one
 * per deployment) that take turns (see {@link WorkerQueue}); a check that runs past
 * {@link MarkupCheckLimits.checkMs} fails its file with `503`.
 */
export class MarkupChecker {
  private readonly queue: WorkerQueue<Uint8Array, string | undefined>;

  constructor(limits: MarkupCheckLimits = DEFAULT_LIMITS) {
    const queueLimits: WorkerQueueLimits = {
      jobMs: limits.checkMs,
      queueBytes: limits.queueBytes,
      queueBytesEach: limits.queueBytesEach,
    };
    this.queue = new WorkerQueue({ base: import.meta.url, name: "markup-worker" }, queueLimits, {
      full: "Too many files are waiting for their content check; retry in a moment.",
      stuck: "The file's content check took too long; retry later.",
      failed: "The file's content check failed; retry later.",
    });
  }

  /** Whether a file of `size` bytes would be taken into `queue` now. */
  hasRoom(size: number, queue = ""): boolean {
    return this.queue.hasRoom(size, queue);
  }

  /**
   * Why `bytes` (markup) can run script in a browser, or undefined (see `markupScriptReason`),
   * checked in `queue`'s turn.
   */
  scriptReason(bytes: Uint8Array, queue = ""): Promise<string | undefined> {
    return this.queue.run(bytes, bytes.length, queue);
  }
}

/** The host's one checker (a thread is started at the first check). */
export const markupChecker = new MarkupChecker();
