/**
 * Where the CLI sends a token: never over plain HTTP to another machine unless
 * `PLATFORM_ALLOW_HTTP=1` (then with a warning), whichever source the token came from; and an
 * environment token displacing the login stored for the very host named says so (an attack review,
 * 2026-12-06: `PLATFORM_ADMIN_TOKEN=... platform logs todo --host http://192.0.2.2:...` sent the
 * operator's token to a LAN address with only a warning). The built CLI against a loopback server
 * reached as `http://0.0.0.0:<port>`, which the CLI cannot tell from another machine's address
 * (Linux and macOS connect it to this machine).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { runCliAsync } from "./helpers/cli.js";
import { type FakeHost, startFakeHost } from "./helpers/fake-host.js";

let server: FakeHost;
let dir: string;
/** The server as the address of another machine. */
let remote: string;
const config = () => join(dir, "config");

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-cli-transport-"));
  server = await startFakeHost((_req, res) => {
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    res.end();
  });
  remote = `http://0.0.0.0:${server.port}`;
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  server.requests.length = 0;
});

const platform = (args: string[], env: Record<string, string> = {}) =>
  runCliAsync(args, { PLATFORM_CONFIG_DIR: config(), ...env });

const refusal = (origin: string) =>
  `error: ${origin} is plain HTTP and not this machine: your token (and a deploy's server env) would cross the network unencrypted, so nothing was sent. Use https:// (docs/operators.md puts TLS in front of the host), or set PLATFORM_ALLOW_HTTP=1 on a network you trust.`;

it("refuses every token over plain HTTP to another machine, sending nothing", async () => {
  await writeFile(
    join(dir, "config.json"),
    JSON.stringify({ logins: { [remote]: { token: "pdt_stored" } } }),
  );
  const attempts: Array<[string[], Record<string, string>]> = [
    [["logs", "todo", "--host", remote], { PLATFORM_ADMIN_TOKEN: "adm_secret" }],
    [["logs", "todo", "--host", remote], { PLATFORM_TOKEN: "pdt_env" }],
    [["logs", "todo", "--host", remote], { PLATFORM_CONFIG_DIR: dir }],
    [["export", "todo", "--host", remote, "--token", "pdt_flag", "--out", join(dir, "x.zip")], {}],
    [["login", "--host", remote, "--token", "pdt_flag"], {}],
    [["developers", "create", "--host", remote], { PLATFORM_ADMIN_TOKEN: "adm_secret" }],
    [["host", "backup", "--host", remote, "--out", join(dir, "b")], { PLATFORM_ADMIN_TOKEN: "adm" }],
    [["deploy", "fixtures/todo", "--host", remote, "--name", "todo"], { PLATFORM_ADMIN_TOKEN: "adm" }],
  ];
  for (const [args, env] of attempts) {
    const refused = await platform(args, env);
    expect([refused.status, refused.stderr.trim()], args.join(" ")).toEqual([2, refusal(remote)]);
  }
  expect(server.requests).toEqual([]);
}, 120_000);

it("sends it with PLATFORM_ALLOW_HTTP=1, warning once", async () => {
  const logs = await platform(["logs", "todo", "--host", remote], {
    PLATFORM_ADMIN_TOKEN: "adm_secret",
    PLATFORM_ALLOW_HTTP: "1",
  });
  expect(logs.status, logs.stderr).toBe(0);
  expect(logs.stderr.trim()).toBe(
    `warning: ${remote} is plain HTTP: your token (and a deploy's server env) crosses the network unencrypted (PLATFORM_ALLOW_HTTP=1).`,
  );
  expect(server.requests).toEqual([
    { method: "GET", url: "/v1/deploys/todo/logs", authorization: "Bearer adm_secret" },
  ]);
}, 60_000);

it("sends it over plain HTTP to this machine, and says when PLATFORM_TOKEN displaces this host's login", async () => {
  const local = server.url;
  await writeFile(join(dir, "config.json"), JSON.stringify({ logins: { [local]: { token: "pdt_stored" } } }));
  const login = await platform(["logs", "todo", "--host", local], { PLATFORM_CONFIG_DIR: dir });
  expect([login.status, login.stderr]).toEqual([0, ""]);
  const env = await platform(["logs", "todo", "--host", local], {
    PLATFORM_CONFIG_DIR: dir,
    PLATFORM_TOKEN: "pdt_env",
  });
  expect(env.status, env.stderr).toBe(0);
  expect(env.stderr.trim()).toBe(
    `warning: PLATFORM_TOKEN is set: it is sent to ${local} instead of your platform login for it. Unset PLATFORM_TOKEN to use the login.`,
  );
  expect(server.requests.map((r) => r.authorization)).toEqual(["Bearer pdt_stored", "Bearer pdt_env"]);
}, 60_000);
