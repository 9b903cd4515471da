import { parentPort } from "node:worker_threads";
import { isPlatformError } from "../../sdk/values/index.js";

/** A platform error a job threw, as it crosses back to the host (anything else crosses as null). */
export interface JobFailure {
  code: string;
  message: string;
}

/** A worker thread's answer to job `id`: its output, or why it failed. */
export type JobReply<Out> = { id: number; output: Out } | { id: number; error: JobFailure | null };

/**
 * Answers a {@link WorkerQueue}'s jobs on this worker thread with `work`, one at a time. A platform
 * error `work` throws reaches the caller with its code and message; any other error as a plain
 * 500, its message kept on the host.
 */
export function serveJobs<In, Out>(
  /** The job; it may name buffers of its output to hand to the host rather than copy (they must own their memory). */
  work: (input: In, handOver: (buffer: ArrayBuffer) => void) => Out,
): void {
  parentPort?.on("message", ({ id, input }: { id: number; input: In }) => {
    let reply: JobReply<Out>;
    const transfer: ArrayBuffer[] = [];
    try {
      reply = { id, output: work(input, (buffer) => transfer.push(buffer)) };
    } catch (error) {
      if (!isPlatformError(error)) console.error("platform: a job on a worker thread failed:", error);
      reply = { id, error: isPlatformError(error) ? { code: error.code, message: error.message } : null };
      transfer.length = 0;
    }
    parentPort?.postMessage(reply, transfer);
  });
}
