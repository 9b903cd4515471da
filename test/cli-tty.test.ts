/**
 * Terminal behaviour of the CLI: in a pseudo-terminal (`script`) the upload progress bar renders;
 * without a TTY the output carries no control characters at all.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CLI, type CliProcess, runCli, startDev } from "./helpers/cli.js";
import { storableRandomBytes } from "./helpers/random-bytes.js";

let dir: string;
let dev: CliProcess;
let port: number;
let file: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-tty-"));
  ({ dev, port } = await startDev("fixtures/todo"));
  file = join(dir, "upload.png");
  await writeFile(
    file,
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      storableRandomBytes(2 * 1024 * 1024),
    ]),
  );
});
afterAll(async () => {
  await dev.stop();
  await rm(dir, { recursive: true, force: true });
});

it("renders the upload progress bar in a terminal", () => {
  const command = [process.execPath, ...CLI, "storage", "put", file, "--port", String(port)]
    .map((part) => `'${part}'`)
    .join(" ");
  const result = spawnSync("script", ["-qec", command, "/dev/null"], {
    encoding: "utf8",
    env: { ...process.env, PLATFORM_CONFIG_DIR: join(dir, "config") },
  });
  expect(result.status, result.stderr).toBe(0);
  expect(result.stdout).toContain("uploading upload.png [");
  expect(result.stdout).toContain("100% 2097160/2097160 bytes");
  expect(result.stdout).toContain("\u001b[");
  expect(result.stdout).toMatch(/key: private\//);
});

it("prints no control characters without a terminal", () => {
  const result = runCli(["storage", "put", file, "--port", String(port)], {
    PLATFORM_CONFIG_DIR: join(dir, "config"),
  });
  expect(result.status, result.stderr).toBe(0);
  for (const output of [
    result.stdout,
    result.stderr,
    runCli(["storage", "list", "--port", String(port)]).stdout,
  ]) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find control characters.
    expect(output).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  }
});
