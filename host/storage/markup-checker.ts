import { LIMITS } from "../../sdk/protocol/index.js";
import { WorkerQueue, type WorkerQueueLimits } from "../threads/worker-queue.js";

const DEFAULT_LIMITS: WorkerQueueLimits = {
  jobMs: LIMITS.markupCheckMs,
  queueBytes: LIMITS.markupCheckQueueBytes,
  queueBytesEach: LIMITS.markupCheckQueueBytesEach,
};

/**
 * Runs the SVG and XML script check (markup-script.ts) on a thread of its own, one file at a
 * time: on the main thread a 250 KB file held every tenant's requests 5 s while the check was
 * quadratic, and a linear check still takes it up to 200 ms for 5 MB. Files wait in queues (one
 * per deployment) that take turns (see {@link WorkerQueue}); a check that runs past
 * {@link WorkerQueueLimits.jobMs} fails its file with `503`.
 */
export class MarkupChecker {
  private readonly queue: WorkerQueue<Uint8Array, string | undefined>;

  constructor(limits: WorkerQueueLimits = DEFAULT_LIMITS) {
    this.queue = new WorkerQueue({ base: import.meta.url, name: "markup-worker" }, limits, {
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
