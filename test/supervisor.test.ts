/**
 * `platform host` as operators run it: a supervisor process and a server process. One capsule
 * allocating far beyond its heap makes V8 give up on the isolate (isolated-vm's documented
 * catastrophic case), which ends the server process; the supervisor starts a new one and the
 * other deployments answer again with their data intact, and its metrics count the restart.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { CLI, type CliProcess, freePort, runCli, runCliAsync, startCli } from "./helpers/cli.js";
import { type HostProcess, startHostProcess } from "./helpers/host-process.js";

let running: HostProcess;
let dir: string;
let host: CliProcess;
let port: number;
const token = "supervisor-test-token";

beforeAll(async () => {
  running = await startHostProcess("platform-supervised-", token);
  ({ dir, process: host, port } = running);
});
afterAll(() => running.stop());

const call = (id: string, kind: string, name: string, args: unknown = {}) =>
  running.call(id, kind, name, args);

it("restarts the server after a catastrophic isolate error; other deployments keep their data", async () => {
  const deployed = runCli(
    ["deploy", "fixtures/todo", "--host", `http://localhost:${port}`, "--name", "canary"],
    { PLATFORM_ADMIN_TOKEN: token },
  );
  expect(deployed.status, deployed.stderr).toBe(0);
  expect(deployed.stdout).toContain(`deployed canary: http://canary.localhost:${port}`);
  for (const text of ["a", "b"]) expect((await call("canary", "mutation", "add", { text })).status).toBe(200);

  const attacker = join(dir, "attacker");
  await mkdir(join(attacker, "server"), { recursive: true });
  await writeFile(
    join(attacker, "server", "index.ts"),
    `import { capsule } from "platform/server";\nexport default capsule({ schema: {}, queries: { boom: async () => new Array(2 ** 28).fill(1.5).length } });\n`,
  );
  expect(
    runCli(["deploy", attacker, "--host", `http://localhost:${port}`, "--name", "attacker"], {
      PLATFORM_ADMIN_TOKEN: token,
    }).status,
  ).toBe(0);

  const outcome = await call("attacker", "query", "boom").then(
    (response) => `status ${response.status}`,
    (error: Error) => `failed: ${error.message}`,
  );
  expect(outcome).not.toBe("status 200");
  await host.waitFor(/restarting in/);
  await host.waitFor(/platform host listening[\s\S]*platform host listening/);
  const list = await call("canary", "query", "list");
  expect(list.status).toBe(200);
  expect(list.json<{ value: Array<{ text: string }> }>().value.map((t) => t.text)).toEqual(["b", "a"]);
  expect(host.output()).toContain("catastrophic isolate error");
  // The new server process knows it is a restart, and the quarantine it was handed.
  const metrics = await sendRequest(`http://localhost:${port}/metrics`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(metrics.text()).toMatch(/^platform_server_restarts_total 1$/m);
  expect(metrics.text()).toMatch(/^platform_quarantined_bundles 1$/m);
}, 90_000);

it("refuses operator calls without the token", async () => {
  const response = await sendRequest(`http://localhost:${port}/v1/deploys`);
  expect(response.status).toBe(401);
  expect(response.json<{ error: { code: string } }>().error.code).toBe("unauthorized");
  const wrong = await sendRequest(`http://localhost:${port}/v1/deploys`, {
    headers: { authorization: "Bearer nope" },
  });
  expect(wrong.status).toBe(403);
});

it("platform login stores a developer token that platform deploy then uses", async () => {
  const { statSync, readFileSync } = await import("node:fs");
  const created = await sendRequest(`http://localhost:${port}/v1/developers`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "cli dev" }),
  });
  const developer = created.json<{ id: string; token: string }>();
  const env = { PLATFORM_CONFIG_DIR: join(dir, "config") };
  // Not spawnSync: a test process blocked longer than the server's keep-alive timeout would send
  // its next request on a connection the server has already closed.
  const refused = await runCliAsync(
    ["login", "--host", `http://localhost:${port}`, "--token", "pdt_nope"],
    env,
  );
  expect(refused.status).toBe(1);
  expect(refused.stderr).toContain(
    "error: forbidden: That token is not valid for this host. Ask the host's operator for a developer token",
  );
  const login = await runCliAsync(
    ["login", "--host", `http://localhost:${port}`, "--token", developer.token],
    env,
  );
  expect(login.status, login.stderr).toBe(0);
  expect(login.stdout).toContain(`as ${developer.id}`);
  const file = join(dir, "config", "config.json");
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(readFileSync(file, "utf8")).toContain(developer.token);
  const deployed = await runCliAsync(
    ["deploy", "fixtures/todo", "--host", `http://localhost:${port}`, "--name", "mine"],
    env,
  );
  expect(deployed.status, deployed.stderr).toBe(0);
  const shown = await sendRequest(`http://localhost:${port}/v1/deploys/mine`, {
    headers: { authorization: `Bearer ${developer.token}` },
  });
  expect(shown.json()).toMatchObject({ id: "mine", owner: developer.id, claimed: true });
  const noCredentials = await runCliAsync(
    ["deploy", "fixtures/todo", "--host", `http://localhost:${port}`, "--name", "nobody"],
    { PLATFORM_CONFIG_DIR: join(dir, "empty") },
  );
  expect(noCredentials.status).toBe(1);
  expect(noCredentials.stderr).toContain("No credentials");
}, 60_000);

it("platform deploy warns when .env.platform.server is tracked by git", async () => {
  const { cp, writeFile: write } = await import("node:fs/promises");
  const { spawnSync } = await import("node:child_process");
  const app = join(dir, "tracked");
  await cp("fixtures/todo", app, { recursive: true });
  await write(join(app, ".env.platform.server"), "API_KEY=abc123\n");
  const git = (...args: string[]) => spawnSync("git", args, { cwd: app, encoding: "utf8" });
  expect(git("init", "-q").status).toBe(0);
  const clean = runCli(["deploy", app, "--host", `http://localhost:${port}`, "--name", "tracked"], {
    PLATFORM_ADMIN_TOKEN: token,
  });
  expect(clean.status, clean.stderr).toBe(0);
  expect(clean.stderr).not.toContain("tracked by git");
  expect(git("add", ".env.platform.server").status).toBe(0);
  const warned = runCli(["deploy", app, "--host", `http://localhost:${port}`, "--name", "tracked"], {
    PLATFORM_ADMIN_TOKEN: token,
  });
  expect(warned.status, warned.stderr).toBe(0);
  expect(warned.stderr).toContain("warning: .env.platform.server is tracked by git");
  expect(warned.stdout + warned.stderr).not.toContain("abc123");
}, 60_000);

it("platform deploy shows upload and index backfill progress, and migration failures", async () => {
  const { mkdir: makeDir, writeFile: write } = await import("node:fs/promises");
  const { spawnSync } = await import("node:child_process");
  const app = join(dir, "backfill");
  await makeDir(join(app, "server"), { recursive: true });
  const source = (extra: string) =>
    `import { capsule, number, table } from "platform/server";\nexport default capsule({ schema: { items: table({ n: number()${extra} }) }, mutations: { seed: async (ctx, args: { from: number }) => { for (let i = args.from; i < args.from + 500; i++) await ctx.db.items.insert({ n: i }); } } });\n`;
  await write(join(app, "server", "index.ts"), source(""));
  const deploy = () =>
    runCli(["deploy", app, "--host", `http://localhost:${port}`, "--name", "backfill"], {
      PLATFORM_ADMIN_TOKEN: token,
    });
  expect(deploy().status).toBe(0);
  // In five calls: 2,500 inserts in one came near the CPU limit of a call on a busy machine.
  for (let from = 0; from < 2500; from += 500)
    expect((await call("backfill", "mutation", "seed", { from })).status).toBe(200);
  await write(
    join(app, "server", "index.ts"),
    `import { capsule, number, table } from "platform/server";\nexport default capsule({ schema: { items: table({ n: number() }).index("by_n", ["n"]) } });\n`,
  );
  const piped = deploy();
  expect(piped.status, piped.stderr).toBe(0);
  expect(piped.stderr).toContain("backfilling items.by_n: 2,500 rows");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find control characters.
  expect(piped.stderr + piped.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  await write(
    join(app, "server", "index.ts"),
    `import { capsule, number, table } from "platform/server";\nexport default capsule({ schema: { items: table({ n: number() }).index("by_n", ["n"]).index("by_n2", ["n"]) } });\n`,
  );
  const command = [
    process.execPath,
    ...CLI,
    "deploy",
    app,
    "--host",
    `http://localhost:${port}`,
    "--name",
    "backfill",
  ]
    .map((part) => `'${part}'`)
    .join(" ");
  const tty = spawnSync("script", ["-qec", command, "/dev/null"], {
    encoding: "utf8",
    env: { ...process.env, PLATFORM_ADMIN_TOKEN: token },
  });
  expect(tty.status, tty.stdout).toBe(0);
  expect(tty.stdout).toContain("uploading bundle [");
  expect(tty.stdout).toContain("\rbackfilling items.by_n2: 2,500 rows");
  await write(
    join(app, "server", "index.ts"),
    `import { capsule, number, string, table } from "platform/server";\nexport default capsule({ schema: { items: table({ n: number(), label: string() }) } });\n`,
  );
  const failed = deploy();
  expect(failed.status).toBe(1);
  expect(failed.stderr.trim()).toBe("error: bad_request: Deploy failed: Missing value for items.label");
}, 180_000);

it("stops with a clear message after repeated start-up failures", async () => {
  const failing = startCli(["host", "--port", String(await freePort()), "--data", "/etc/hostname/data"], {
    PLATFORM_ADMIN_TOKEN: token,
  });
  const code = await new Promise<number | null>((resolve) => failing.child.once("exit", resolve));
  expect(code).toBe(1);
  expect(failing.output()).toMatch(/the server failed to start 5 times in a row .*; stopping/);
  expect(failing.output().match(/restarting in \d+ ms/g)?.length).toBe(4);
}, 120_000);
