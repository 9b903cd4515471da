/**
 * What the CLI puts into a URL from its command line: a file's key and a deployment id are checked
 * against the shapes the host issues before any request, so dot segments, escapes and `@` cannot
 * take the owner's token to another route or host (an attack review, 2026-12-06: `platform
 * storage delete "private/../../../../../deploys/todo"` deleted the deployment). The built CLI
 * against a loopback server that records what reaches it.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { runCliAsync } from "./helpers/cli.js";
import { type FakeHost, startFakeHost } from "./helpers/fake-host.js";

let server: FakeHost;
let dir: string;
const KEY = "private/AbCdEfGhIjKlMnOpQrStUv";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-cli-paths-"));
  await writeFile(join(dir, "app.zip"), "not read: refused before");
  server = await startFakeHost((_req, res) => {
    res.writeHead(204);
    res.end();
  });
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  server.requests.length = 0;
});

const platform = (...args: string[]) =>
  runCliAsync(args, { PLATFORM_CONFIG_DIR: join(dir, "config"), PLATFORM_TOKEN: "pdt_owner" });

it("refuses a file key with dot segments or escapes as a usage error naming it, sending nothing", async () => {
  for (const key of [
    "private/../../../../../deploys/todo",
    "private/%2e%2e/%2e%2e/deploys/todo",
    "private/AbCdEfGhIjKlMnOpQrStUv?x=1",
    "public/",
  ]) {
    const hosted = await platform("storage", "delete", key, "--deploy", "todo", "--host", server.url);
    expect(hosted.status, hosted.stderr).toBe(2);
    expect(hosted.stderr).toContain(key);
    expect(hosted.stderr).toContain("A file's key is public/<id> or private/<id>");
    const local = await platform("storage", "get", key, "--port", String(server.port), "--out", "x");
    expect(local.status, local.stderr).toBe(2);
  }
  expect(server.requests).toEqual([]);
}, 60_000);

it("refuses a deployment id that is not one, in every command that puts it into a URL", async () => {
  const id = "../../../v1/me";
  const attempts = [
    ["logs", id, "--host", server.url],
    ["export", id, "--host", server.url, "--out", join(dir, "out.zip")],
    ["import", join(dir, "app.zip"), id, "--host", server.url],
    ["storage", "list", "attacker/x", "--host", server.url],
    ["storage", "delete", KEY, "--deploy", "x@attacker", "--host", server.url],
    ["storage", "get", KEY, "--deploy", `http://${server.url.slice(7)}`, "--out", "x"],
  ];
  for (const args of attempts) {
    const refused = await platform(...args);
    expect(refused.status, `${args.join(" ")}: ${refused.stderr}`).toBe(2);
  }
  expect(server.requests).toEqual([]);
}, 60_000);

it("sends a valid key and id as the path the host routes", async () => {
  const deleted = await platform("storage", "delete", KEY, "--deploy", "todo", "--host", server.url);
  expect(deleted.status, deleted.stderr).toBe(0);
  expect(server.requests).toEqual([
    { method: "DELETE", url: `/v1/me/deploys/todo/storage/${KEY}`, authorization: "Bearer pdt_owner" },
  ]);
}, 60_000);
