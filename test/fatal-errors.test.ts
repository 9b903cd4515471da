/**
 * An error nothing handled ends the server process at once. Node's own exit waits for
 * isolated-vm's threads, and a thread blocked in an isolate (as the inline sentinel's always is)
 * never ends: one malformed WebSocket message once left `platform host` hung, serving no one, and
 * its supervisor, which restarts a server only once it exited, waited for good. A real process
 * with a real isolate blocked on its own thread.
 */
import { spawn } from "node:child_process";
import { expect, it } from "vitest";

const SCRIPT = `
import ivm from "isolated-vm";
import { exitOnUnhandledErrors } from "./dist/cli/fatal-errors.js";
exitOnUnhandledErrors("platform test");
const isolate = new ivm.Isolate({ memoryLimit: 8 });
const context = isolate.createContextSync();
// Blocks its thread for good, as the inline sentinel's waits between entries.
void context.eval("Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)").catch(() => {});
setTimeout(() => Promise.reject(new Error("nobody handles this")), 200);
`;

it("kills the process on an unhandled rejection instead of waiting for blocked isolate threads", async () => {
  const child = spawn(process.execPath, ["--no-node-snapshot", "--input-type=module", "-e", SCRIPT], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
    child.once("exit", (_code, sig) => resolve(sig)),
  );
  expect(signal).toBe("SIGKILL");
  expect(stderr).toContain("platform test: unhandled error, stopping: Error: nobody handles this");
}, 60_000);
