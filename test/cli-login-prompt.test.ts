/**
 * `platform login` asking for the token on a terminal: what is typed is not shown (a pasted token
 * stayed on the screen and in the terminal's scrollback), and it is stored as typed. The built CLI
 * runs in a real pseudo-terminal (util-linux `script`) against a real host on loopback.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CLI } from "./helpers/cli.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let dir: string;
let token: string;

beforeAll(async () => {
  host = await startTestHost({ requestQuota: false });
  dir = await mkdtemp(join(tmpdir(), "platform-cli-login-"));
  token = (await host.admin("/v1/developers", "POST", { name: "typist" })).json<{ token: string }>().token;
});
afterAll(async () => {
  await host.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** `text` quoted for a POSIX shell. */
const quoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * Runs `platform <args>` in a pseudo-terminal, typing `typed` once the prompt shows; answers
 * everything the terminal showed, and the exit status.
 */
function inTerminal(args: string[], typed: string): Promise<{ status: number | null; shown: string }> {
  const command = [process.execPath, ...CLI, ...args].map(quoted).join(" ");
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      env: { ...process.env, PLATFORM_CONFIG_DIR: join(dir, "config") },
    });
    let shown = "";
    let sent = false;
    child.stdout.on("data", (chunk: Buffer) => {
      shown += chunk.toString();
      if (!sent && shown.includes("Developer token")) {
        sent = true;
        child.stdin.write(`${typed}\r`);
      }
    });
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, shown }));
  });
}

it("does not show the token as it is typed, and stores it", async () => {
  const { status, shown } = await inTerminal(["login", "--host", host.url], token);
  expect(status, shown).toBe(0);
  expect(shown).toContain("Developer token (from POST /v1/developers): ");
  expect(shown).toMatch(/logged in to http:\/\/localhost:\d+ as dev_/);
  expect(shown).not.toContain(token);
  expect(shown).not.toContain(token.slice(0, 8));
  const stored = JSON.parse(await readFile(join(dir, "config", "config.json"), "utf8")) as {
    logins: Record<string, { token: string }>;
  };
  expect(Object.values(stored.logins).map((login) => login.token)).toEqual([token]);
}, 60_000);

it("ends at Ctrl-C with nothing stored", async () => {
  const { status, shown } = await inTerminal(["login", "--host", `${host.url}/`], "pdt_half\x03");
  expect(status, shown).toBe(130);
  expect(shown).not.toContain("pdt_half");
  expect(shown).not.toContain("logged in");
  const stored = JSON.parse(await readFile(join(dir, "config", "config.json"), "utf8")) as {
    logins: Record<string, { token: string }>;
  };
  expect(Object.values(stored.logins).map((login) => login.token)).toEqual([token]);
}, 60_000);
