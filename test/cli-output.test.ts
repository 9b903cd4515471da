/**
 * What the CLI's output looks like to a person: colour only on a terminal and never with
 * `NO_COLOR` (a pseudo-terminal from `script` stands in for one), and `platform dev` printing a
 * sign-in code as a readable line instead of a JSON log line.
 */
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { CLI, type CliProcess, freePort, runCli, startDev } from "./helpers/cli.js";

/** Runs the CLI in a pseudo-terminal; its stdout and stderr both arrive on `script`'s stdout. */
function inTerminal(args: string[], env: Record<string, string>): { status: number | null; output: string } {
  const command = [process.execPath, ...CLI, ...args].map((part) => `'${part}'`).join(" ");
  const result = spawnSync("script", ["-qec", command, "/dev/null"], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  return { status: result.status, output: result.stdout };
}

const ESCAPE = "\u001b[";

it("colours a terminal's output, and never with NO_COLOR or without a terminal", async () => {
  // No dev server on this port: the command fails with `error: unavailable: ...`.
  const args = ["logs", "--port", String(await freePort())];
  const coloured = inTerminal(args, { NO_COLOR: "", FORCE_COLOR: "" });
  expect(coloured.status).toBe(1);
  expect(coloured.output).toContain(`${ESCAPE}31merror${ESCAPE}39m: unavailable: Cannot reach`);

  const noColor = inTerminal(args, { NO_COLOR: "1", FORCE_COLOR: "" });
  expect(noColor.status).toBe(1);
  expect(noColor.output).toContain("error: unavailable: Cannot reach");
  expect(noColor.output).not.toContain("\u001b");

  const piped = runCli(args, { NO_COLOR: "", FORCE_COLOR: "" });
  expect(piped.status).toBe(1);
  expect(piped.stderr).toMatch(/^error: unavailable: Cannot reach/);
  expect(piped.stdout + piped.stderr).not.toContain("\u001b");
});

let dev: CliProcess;
let port: number;

beforeAll(async () => {
  ({ dev, port } = await startDev("fixtures/todo"));
});
afterAll(async () => {
  await dev.stop();
});

it("platform dev prints a sign-in code as one readable line that signs in", async () => {
  const post = (path: string, body: unknown) =>
    sendRequest(`http://localhost:${port}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const started = await post("/__platform/auth/email/start", { email: "Ada@Example.com" });
  expect(started.status).toBe(200);
  const { attempt } = started.json<{ attempt: string }>();
  const line = /sign-in code for ada@example\.com: (\d{8}) \(expires in 10 minutes\)\n/;
  await dev.waitFor(line);
  const code = line.exec(dev.output())?.[1];
  const verified = await post("/__platform/auth/email/verify", { email: "ada@example.com", code, attempt });
  expect(verified.status).toBe(200);
  expect(dev.output()).not.toContain("email_code");
  expect(dev.output()).not.toMatch(/^\{/m);
}, 60_000);
