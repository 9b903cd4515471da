/**
 * Ctrl-C in a terminal stops `platform dev` cleanly: the terminal signals the whole process group
 * (the CLI that re-ran itself with Node's flags, and the one it started, which the first forwards
 * the signal to as well), and the second signal killed the dev server midway through its cleanup,
 * leaving its database, env values in it, in the temporary folder.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { freePort } from "../scripts/free-port.js";

let temp: string;
beforeEach(async () => {
  temp = await mkdtemp(join(tmpdir(), "platform-dev-stop-"));
});
afterEach(() => rm(temp, { recursive: true, force: true }));

it("removes its folders when the terminal's Ctrl-C reaches its process group", async () => {
  const port = await freePort();
  // Without Node's flags, as a user runs it: it starts itself again with them.
  const child = spawn(process.execPath, ["dist/cli/bin.js", "dev", "fixtures/todo", "--port", String(port)], {
    env: { ...process.env, TMPDIR: temp },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  for (const stream of [child.stdout, child.stderr]) stream.on("data", (chunk: Buffer) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!output.includes("platform dev: serving")) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`dev did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect((await readdir(temp)).some((name) => name.startsWith("platform-dev-"))).toBe(true);
  process.kill(-(child.pid as number), "SIGINT");
  expect(await exited).toBe(0);
  expect((await readdir(temp)).filter((name) => name.startsWith("platform-"))).toEqual([]);
}, 90_000);
