/**
 * A crash on an isolate's own thread (not the host's main thread): V8 gives up on the isolate while
 * it runs threaded, isolated-vm runs the isolate's crash callback on the main thread, and that
 * callback reports the bundle on the supervisor channel and ends the process at once. The
 * supervisor's side (quarantine, restart) is tested in crash-containment.test.ts with a crash on
 * the main thread; both paths write the same line.
 */
import { spawn } from "node:child_process";
import { expect, it } from "vitest";
import { REQUIRED_NODE_FLAGS } from "../cli/node-flags.js";
import { SUPERVISOR_FD_ENV } from "../host/isolates/crash-record.js";

it("a threaded isolate's catastrophic error reports its bundle to the supervisor and ends the process", async () => {
  const child = spawn(
    process.execPath,
    [...REQUIRED_NODE_FLAGS, "--import", "tsx", "test/helpers/threaded-crash.ts"],
    {
      env: { ...process.env, [SUPERVISOR_FD_ENV]: "3" },
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  let channel = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  (child.stdio[3] as NodeJS.ReadableStream).on("data", (chunk: Buffer) => {
    channel += chunk.toString();
  });
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  expect(stdout, stderr).toContain("running");
  expect(stdout).not.toContain("survived");
  expect(channel).toBe("crash threaded-crash-bundle crashing-app dev_crasher call\n");
  expect(stderr).toContain(
    "catastrophic isolate error (Catastrophic out-of-memory error) in bundle threaded-crash-bundle of deployment crashing-app",
  );
  expect(exit.signal).toBe("SIGKILL");
}, 120_000);
