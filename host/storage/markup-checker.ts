import { Worker } from "node:worker_threads";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/** One check waiting for the thread, or on it. */
interface Job {
  id: number;
  bytes: Uint8Array;
  resolve: (reason: string | undefined) => void;
  reject: (error: unknown) => void;
}

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
 * quadratic, and a linear check still takes it up to 200 ms for 5 MB. Files wait in turn, at most
 * {@link LIMITS.markupCheckQueueBytes} of them (beyond, `503 unavailable`); a check that runs past
 * {@link LIMITS.markupCheckMs} ends the thread (a new one takes the next file) and fails its file
 * with `503`.
 */
export class MarkupChecker {
  private worker: Worker | undefined;
  private readonly queue: Job[] = [];
  private running: { job: Job; timer: NodeJS.Timeout } | undefined;
  private queuedBytes = 0;
  private nextId = 1;

  constructor(
    private readonly limits: { checkMs: number; queueBytes: number } = {
      checkMs: LIMITS.markupCheckMs,
      queueBytes: LIMITS.markupCheckQueueBytes,
    },
  ) {}

  /** Why `bytes` (markup) can run script in a browser, or undefined (see `markupScriptReason`). */
  scriptReason(bytes: Uint8Array): Promise<string | undefined> {
    if (this.queuedBytes + bytes.length > this.limits.queueBytes)
      return Promise.reject(
        unavailable("Too many files are waiting for their content check; retry in a moment."),
      );
    return new Promise((resolve, reject) => {
      this.queuedBytes += bytes.length;
      this.queue.push({ id: this.nextId++, bytes, resolve, reject });
      this.startNext();
    });
  }

  private startNext(): void {
    if (this.running || this.queue.length === 0) return;
    const job = this.queue.shift() as Job;
    const worker = this.ensureWorker();
    const timer = setTimeout(() => {
      // The thread is stuck on this file: end it, fail the file, and go on with a new thread.
      this.worker = undefined;
      void worker.terminate();
      this.finish(job.id, () => {}, unavailable("The file's content check took too long; retry later."));
    }, this.limits.checkMs);
    timer.unref();
    this.running = { job, timer };
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
    worker.on("error", () => {
      if (this.worker === worker) this.worker = undefined;
      if (this.running)
        this.finish(
          this.running.job.id,
          () => {},
          unavailable("The file's content check failed; retry later."),
        );
    });
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
    });
    this.worker = worker;
    return worker;
  }

  /** Settles the running job `id` (`settle`, or rejects it with `error`), then starts the next. */
  private finish(id: number, settle: (job: Job) => void, error?: unknown): void {
    const running = this.running;
    if (!running || running.job.id !== id) return;
    clearTimeout(running.timer);
    this.running = undefined;
    this.queuedBytes -= running.job.bytes.length;
    if (error === undefined) settle(running.job);
    else running.job.reject(error);
    this.startNext();
    if (!this.running) this.worker?.unref();
  }
}

/** The host's one checker (a thread is started at the first check). */
export const markupChecker = new MarkupChecker();
