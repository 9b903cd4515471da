/**
 * Text the host keeps from a tenant (log lines, failures' messages) keeps only itself alive. A
 * cut of a longer string is, in V8, a view of all of it: a tenant logging lines of 8 MiB, of which
 * 4,096 characters were kept, ran the host out of memory in 15 s. Measured in a process of its
 * own, after full collections.
 */
import { spawnSync } from "node:child_process";
import { expect, it } from "vitest";

const SCRIPT = `
import { LogHub } from "./dist/host/deployments/log-hub.js";
import { handlerError } from "./dist/host/deployments/dispatch.js";
const hub = new LogHub(false);
const kept = [];
const env = { KEY: "secret-value" };
for (let i = 0; i < 40; i++) {
  const sink = hub.sink("d" + (i % 4), "h", "r" + i, env);
  // Distinct text each time, as a tenant's would be.
  sink({ level: "info", message: String(i).padEnd(8 * 1024 * 1024, "m") });
  kept.push(handlerError({ code: "handler_error", message: String(i).padEnd(8 * 1024 * 1024, "e") }, env).message);
}
globalThis.gc();
globalThis.gc();
process.stdout.write(String(process.memoryUsage().heapUsed));
`;

it("keeps 4,096 characters of an 8 MiB log line or failure as 4,096 characters", () => {
  const run = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", SCRIPT], {
    encoding: "utf8",
  });
  expect(run.status, run.stderr).toBe(0);
  // 80 texts of 8 MiB kept whole would be 640 MB; their 4 KiB cuts are 0.3 MB.
  expect(Number(run.stdout)).toBeLessThan(100 * 1024 * 1024);
});
