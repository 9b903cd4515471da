/**
 * The queue of CPU-heavy jobs on a thread of their own (host/threads/worker-queue.ts), on a real
 * worker thread: answers and platform errors cross back as they are, anything else as a plain 500,
 * and a thread that ends without an error fails its job at once (not at the job's time limit) and
 * the next job gets a new thread.
 */
import { expect, it } from "vitest";
import { WorkerQueue } from "../host/threads/worker-queue.js";

type Job = { op: "echo" | "refuse" | "crash" | "exit"; value?: string };

function queue(): WorkerQueue<Job, string> {
  return new WorkerQueue<Job, string>(
    { base: new URL("./helpers/jobs-worker.ts", import.meta.url).href, name: "jobs-worker" },
    // Longer than the test may take: a job failed before it was failed at once.
    { jobMs: 120_000, queueBytes: 1024, queueBytesEach: 1024 },
    { full: "full", stuck: "stuck", failed: "failed" },
  );
}

it("answers jobs, keeping a platform error's code and message and hiding any other", async () => {
  const jobs = queue();
  expect(await jobs.run({ op: "echo", value: "hi" }, 1)).toBe("hi");
  await expect(jobs.run({ op: "refuse", value: "x" }, 1)).rejects.toMatchObject({
    code: "bad_request",
    message: "refused x",
  });
  await expect(jobs.run({ op: "crash" }, 1)).rejects.toMatchObject({
    code: "internal",
    message: "Internal error.",
  });
  expect(await jobs.run({ op: "echo", value: "still" }, 1)).toBe("still");
});

it("fails the job of a thread that ended without an error at once, and runs the next on a new one", async () => {
  const jobs = queue();
  const ended = jobs.run({ op: "exit" }, 1);
  const next = jobs.run({ op: "echo", value: "after" }, 1);
  await expect(ended).rejects.toMatchObject({ code: "unavailable", message: "failed" });
  expect(await next).toBe("after");
}, 60_000);
