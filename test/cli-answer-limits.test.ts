/**
 * A server's answer is read only so far: `platform login` against an endless `/v1/me` and
 * `platform logs` against a line that does not end fail with `too_large` instead of growing without
 * bound (an attack review, 2026-12-06: 13.6 GB in 60 s; 3.8 GB for a 64 MiB line). The built CLI
 * against a loopback server that writes 24 MiB as fast as they are read, or until the CLI goes.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCliAsync } from "./helpers/cli.js";
import { type FakeHost, startFakeHost } from "./helpers/fake-host.js";

let endless: FakeHost;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-cli-limits-"));
  const chunk = Buffer.alloc(1024 * 1024, "A");
  // 24 MiB without a newline, as fast as it is read: past both limits, and not endless, so that a
  // CLI without them fails these tests instead of filling the machine's memory.
  endless = await startFakeHost((_req, res) => {
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    let sent = 0;
    const pump = () => {
      while (!res.destroyed && sent < 24) {
        sent++;
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      res.end();
    };
    pump();
  });
});
afterAll(async () => {
  await endless.close();
  await rm(dir, { recursive: true, force: true });
});

const platform = (...args: string[]) =>
  runCliAsync(args, { PLATFORM_CONFIG_DIR: join(dir, "config"), PLATFORM_TOKEN: "pdt_x" });

it("login stops reading an answer at 16 MiB", async () => {
  const login = await platform("login", "--host", endless.url, "--token", "pdt_x");
  expect([login.status, login.stdout]).toEqual([1, ""]);
  expect(login.stderr.trim()).toBe(
    `error: too_large: The answer of ${endless.url} passed 16 MiB, more than a platform host sends: the rest was not read. Is --host a platform host?`,
  );
}, 60_000);

it("logs stops reading a line that passes 1 MiB", async () => {
  const logs = await platform("logs", "app", "--host", endless.url, "--follow");
  expect([logs.status, logs.stdout]).toEqual([1, ""]);
  expect(logs.stderr.trim()).toBe(
    "error: too_large: A line of the host's answer passed 1 MiB, more than a platform host sends: the rest was not read.",
  );
}, 60_000);
