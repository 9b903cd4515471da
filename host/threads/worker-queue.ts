import { Worker } from "node:worker_threads";
import { ERROR_STATUS, type ErrorCode, PlatformError } from "../../sdk/values/index.js";
import type { JobFailure, JobReply } from "./serve-jobs.js";

/** How much a {@link WorkerQueue} takes on. */
export interface WorkerQueueLimits {
  /** How long one job may run before its thread is ended. */
  jobMs: number;
  /** Bytes of jobs waiting or running, all queues together. */
  queueBytes: number;
  /** Bytes of jobs waiting or running, one queue. */
  queueBytesEach: number;
}

/** What a {@link WorkerQueue}'s refusals say (each is a `503 unavailable`). */
export interface WorkerQueueMessages {
  /** Past the bytes that may wait. */
  full: string;
  /** A job ran past {@link WorkerQueueLimits.jobMs}. */
  stuck: string;
  /** The thread failed. */
  failed: string;
}

/** One job waiting for the thread, or on it. */
interface Job<Out> {
  id: number;
  queue: string;
  size: number;
  input: unknown;
  transfer: ArrayBuffer[];
  resolve: (output: Out) => void;
  reject: (error: unknown) => void;
}

/**
 * The worker's module `name` beside `base` (a module's `import.meta.url`): the built `.js`, or,
 * when the host runs from its TypeScript sources (the tests), the `.ts` one loaded through tsx.
 */
function startWorker(base: string, name: string): Worker {
  if (!base.endsWith(".ts")) return new Worker(new URL(`./${name}.js`, base));
  const source = JSON.stringify(new URL(`./${name}.ts`, base).href);
  return new Worker(
    `import("tsx/esm/api").then(({ register }) => { register(); return import(${source}); })`,
    { eval: true },
  );
}

const unavailable = (message: string) => new PlatformError("unavailable", message, { retryAfterSeconds: 1 });

/**
 * Runs CPU-heavy jobs on a thread of their own, one at a time, so the host's main thread (every
 * tenant's requests) never spends them. Jobs wait in named queues (one per tenant) that take
 * turns, so one tenant's jobs delay another's by at most one job each; a queue holds at most
 * {@link WorkerQueueLimits.queueBytesEach} bytes of jobs, all of them
 * {@link WorkerQueueLimits.queueBytes} (beyond, `503 unavailable`). A job that runs past
 * {@link WorkerQueueLimits.jobMs} ends the thread (a new one takes the next job) and fails with
 * `503`. The thread's module answers through serve-jobs.ts; a platform error it throws reaches
 * the caller with its code and message.
 */
export class WorkerQueue<In, Out> {
  private worker: Worker | undefined;
  /** Waiting jobs by queue, in the order the queues take turns. */
  private readonly queues = new Map<string, Job<Out>[]>();
  private readonly bytesByQueue = new Map<string, number>();
  private running: { job: Job<Out>; worker: Worker; timer: NodeJS.Timeout } | undefined;
  private queuedBytes = 0;
  private nextId = 1;

  constructor(
    /** Where the worker's module is: `name`, beside the module whose `import.meta.url` is `base`. */
    private readonly module: { base: string; name: string },
    private readonly limits: WorkerQueueLimits,
    private readonly messages: WorkerQueueMessages,
  ) {}

  /** Whether a job of `size` bytes would be taken into `queue` now. */
  hasRoom(size: number, queue = ""): boolean {
    return (
      this.queuedBytes + size <= this.limits.queueBytes &&
      (this.bytesByQueue.get(queue) ?? 0) + size <= this.limits.queueBytesEach
    );
  }

  /**
   * Runs the thread's job on `input` (counted as `size` bytes) in `queue`'s turn; the buffers in
   * `transfer` are handed to the thread then, not copied.
   */
  run(input: In, size: number, queue = "", transfer: ArrayBuffer[] = []): Promise<Out> {
    if (!this.hasRoom(size, queue)) return Promise.reject(unavailable(this.messages.full));
    return new Promise<Out>((resolve, reject) => {
      this.queuedBytes += size;
      this.bytesByQueue.set(queue, (this.bytesByQueue.get(queue) ?? 0) + size);
      const waiting = this.queues.get(queue);
      const job = { id: this.nextId++, queue, size, input, transfer, resolve, reject };
      if (waiting) waiting.push(job);
      else this.queues.set(queue, [job]);
      this.startNext();
    });
  }

  /** The next job: the first of the queue whose turn it is (that queue then goes last). */
  private takeNext(): Job<Out> | undefined {
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
      // The thread is stuck on this job: end it, fail the job, and go on with a new thread.
      if (this.worker === worker) this.worker = undefined;
      void worker.terminate();
      this.finish(job.id, (stuck) => stuck.reject(unavailable(this.messages.stuck)));
    }, this.limits.jobMs);
    timer.unref();
    this.running = { job, worker, timer };
    // A job under way keeps the process alive; an idle thread does not (see finish).
    worker.ref();
    worker.postMessage({ id: job.id, input: job.input }, job.transfer);
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(this.module.base, this.module.name);
    worker.on("message", (reply: JobReply<Out>) =>
      this.finish(reply.id, (job) =>
        "error" in reply ? job.reject(errorOf(reply.error)) : job.resolve(reply.output),
      ),
    );
    worker.on("error", (error) => {
      console.error(`platform: the thread of ${this.module.name} failed:`, error);
      if (this.worker === worker) this.worker = undefined;
      // Only the job this thread was running fails; one that an older thread failed on is settled.
      if (this.running?.worker === worker)
        this.finish(this.running.job.id, (job) => job.reject(unavailable(this.messages.failed)));
    });
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
      // Gone without an error (its module exited): the job it ran fails now, not at its time limit.
      if (this.running?.worker === worker)
        this.finish(this.running.job.id, (job) => job.reject(unavailable(this.messages.failed)));
    });
    this.worker = worker;
    return worker;
  }

  /** Settles the running job `id` with `settle`, then starts the next. */
  private finish(id: number, settle: (job: Job<Out>) => void): void {
    const running = this.running;
    if (!running || running.job.id !== id) return;
    clearTimeout(running.timer);
    this.running = undefined;
    const { job } = running;
    this.queuedBytes -= job.size;
    const left = (this.bytesByQueue.get(job.queue) ?? 0) - job.size;
    if (left > 0) this.bytesByQueue.set(job.queue, left);
    else this.bytesByQueue.delete(job.queue);
    settle(job);
    this.startNext();
    if (!this.running) this.worker?.unref();
  }
}

/** A job's failure as the thread told it: its platform error again, else a 500 that says nothing. */
function errorOf(failure: JobFailure | null): PlatformError {
  return failure !== null && Object.hasOwn(ERROR_STATUS, failure.code)
    ? new PlatformError(failure.code as ErrorCode, failure.message)
    : new PlatformError("internal", "Internal error.");
}
