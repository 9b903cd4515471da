/** A worker module for test/worker-queue.test.ts: jobs that answer, throw, or end the thread. */

import { serveJobs } from "../../host/threads/serve-jobs.js";
import { PlatformError } from "../../sdk/values/index.js";

serveJobs((input: { op: "echo" | "refuse" | "crash" | "exit"; value?: string }) => {
  if (input.op === "refuse") throw new PlatformError("bad_request", `refused ${input.value}`);
  if (input.op === "crash") throw new Error("a secret of the host");
  if (input.op === "exit") process.exit(0);
  return input.value;
});
