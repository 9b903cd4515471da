import { Worker } from "node:worker_threads";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/** One check waiting for the thread, or on it. */
interface Job {
  id: number;
  queue: string;
  bytes: Uint8Array;
  resolve: (reason: string | undefined) => void;
  reject: (error: unknown) => void;
}

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
 * The worker's module: the built `.js` beside this file, or, when the host runs from its
 * TypeScript sources (the tests), the `.ts` one loaded through tsx.
 */
function startWorker(): Worker {
  const own = import.meta.url;
  if (!own.endsWith(".ts")) return new Worker(new URL("./markup-worker.js", own));
  const source = JSON.stringify(new URL("./markup-worker.ts", own).href);
  return new Worker(
    `import("tsx/esm/api").then(({ register }) => { register(); return import(${source}); })`,
    { eval: true },
  );
}

const unavailable = (message: string) => new PlatformError("unavailable", message, { retryAfterSeconds: 1 });

/**
 * Runs the SVG and XML script check (markup-script.ts) on a thread of its own, one file at a
 * time: on the main thread a 250 KB file held every tenant's requests 5 s while the check was
 * quadratic, and a linear check still takes it up to 200 ms for 5 MB. Files wait in queues (one
 * per deployment) that take turns, so one tenant's files delay another's by at most one file each;
 * a queue holds at most {@link MarkupCheckLimits.queueBytesEach}, all of them
 * {@link MarkupCheckLimits.queueBytes} (beyond, `503 unavailable`). A check that runs past
 * {@link MarkupCheckLimits.checkMs} ends the thread (a new one takes the next file) and fails its
 * file with `503`.
 */
export class MarkupChecker {
  private worker: Worker | undefined;
  /** Waiting files by queue, in the order the queues take turns. */
  private readonly queues = new Map<string, Job[]>();
  private readonly bytesByQueue = new Map<string, number>();
  private running: { job: Job; worker: Worker; timer: NodeJS.Timeout } | undefined;
  private queuedBytes = 0;
  private nextId = 1;

  constructor(private readonly limits: MarkupCheckLimits = DEFAULT_LIMITS) {}

  /** Whether a file of `size` bytes would be taken into `queue` now. */
  hasRoom(size: number, queue = ""): boolean {
    return (
      this.queuedBytes + size <= this.limits.queueBytes &&
      (this.bytesByQueue.get(queue) ?? 0) + size <= this.limits.queueBytesEach
    );
  }

  /**
   * Why `bytes` (markup) can run script in a browser, or undefined (see `markupScriptReason`),
   * checked in `queue`'s turn.
   */
  scriptReason(bytes: Uint8Array, queue = ""): Promise<string | undefined> {
    if (!this.hasRoom(bytes.length, queue))
      return Promise.reject(
        unavailable("Too many files are waiting for their content check; retry in a moment."),
      );
    return new Promise((resolve, reject) => {
      this.queuedBytes += bytes.length;
      this.bytesByQueue.set(queue, (this.bytesByQueue.get(queue) ?? 0) + bytes.length);
      const waiting = this.queues.get(queue);
      const job = { id: this.nextId++, queue, bytes, resolve, reject };
      if (waiting) waiting.push(job);
      else this.queues.set(queue, [job]);
      this.startNext();
    });
  }

  /** The next file: the first of the queue whose turn it is (that queue then goes last). */
  private takeNext(): Job | undefined {
    for (const [queue, jobs] of this.queues) {
      this.queues.delete(queue);
      const job = jobs.shift();
      if (jobs.length > 0) this.queues.set(queue, jobs);
      if (job) return job;
    }
    return undefined;
  }

  private startNext(): void {
    if (this.running) return;
    const job = this.takeNext();
    if (!job) return;
    const worker = this.ensureWorker();
    const timer = setTimeout(() => {
      // The thread is stuck on this file: end it, fail the file, and go on with a new thread.
      if (this.worker === worker) this.worker = undefined;
      void worker.terminate();
      this.finish(job.id, (stuck) =>
        stuck.reject(unavailable("The file's content check took too long; retry later.")),
      );
    }, this.limits.checkMs);
    timer.unref();
    this.running = { job, worker, timer };
    // A check under way keeps the process alive; an idle thread does not (see finish).
    worker.ref();
    worker.postMessage({ id: job.id, bytes: job.bytes });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker();
    worker.on("message", ({ id, reason }: { id: number; reason: string | undefined }) =>
      this.finish(id, (job) => job.resolve(reason)),
    );
    worker.on("error", (error) => {
      console.error("platform: the content check's thread failed:", error);
      if (this.worker === worker) this.worker = undefined;
      // Only the file this thread was checking fails; one that an older thread failed on is settled.
      if (this.running?.worker === worker)
        this.finish(this.running.job.id, (job) =>
          job.reject(unavailable("The file's content check failed; retry later.")),
        );
    });
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
    });
    this.worker = worker;
    return worker;
  }

  /** Settles the running job `id` with `settle`, then starts the next. */
  private finish(id: number, settle: (job: Job) => void): void {
    const running = this.running;
    if (!running || running.job.id !== id) return;
    clearTimeout(running.timer);
    this.running = undefined;
    const { job } = running;
    this.queuedBytes -= job.bytes.length;
    const left = (this.bytesByQueue.get(job.queue) ?? 0) - job.bytes.length;
    if (left > 0) this.bytesByQueue.set(job.queue, left);
    else this.bytesByQueue.delete(job.queue);
    settle(job);
    this.startNext();
    if (!this.running) this.worker?.unref();
  }
}

/** The host's one checker (a thread is started at the first check). */
export const markupChecker = new MarkupChecker();
