/**
 * A quarantine follows the code's deployment and developer, not only its bytes. Against a real
 * `platform host` (supervisor and server processes) over real HTTP, a hostile developer whose
 * query makes V8 give up on its isolate (ending the server process) tries to crash the host again:
 * by deploying a changed bundle to the same deployment (refused), and by crashing from a second
 * deployment of theirs (allowed once: then all of their deployments and deploys are refused). Another
 * developer's deployments answer throughout. `--quarantine 600` keeps every quarantine in force for
 * the whole test, however slow the machine.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import { type CliProcess, runCliAsync } from "./helpers/cli.js";
import { type HostProcess, startHostProcess } from "./helpers/host-process.js";

let running: HostProcess;
let host: CliProcess;
let url: string;
const token = "quarantine-follows-token";

beforeAll(async () => {
  running = await startHostProcess("platform-quarantine-", token, [
    "--request-quota",
    "0",
    "--quarantine",
    "600",
  ]);
  host = running.process;
  url = `http://localhost:${running.port}`;
});
afterAll(() => running.stop());

const errorOf = (response: HttpResponse) =>
  response.json<{ error: { code: string; message: string } }>().error;

async function developer(name: string): Promise<{ id: string; token: string }> {
  const created = await sendRequest(`${url}/v1/developers`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name }),
  });
  expect(created.status, created.text()).toBe(201);
  return created.json<{ id: string; token: string }>();
}

/** A capsule whose query `boom` ends the server process; `variant` changes its bytes. */
async function crashingApp(variant: string): Promise<string> {
  const dir = join(running.dir, `crash-${variant}`);
  await mkdir(join(dir, "server"), { recursive: true });
  await writeFile(
    join(dir, "server", "index.ts"),
    `import { capsule } from "platform/server";\nexport default capsule({ schema: {}, queries: { boom: async () => new Array(2 ** 28).fill(1.5).length, variant: async () => "${variant}" } });\n`,
  );
  return dir;
}

const deploy = (path: string, name: string, developerToken: string) =>
  runCliAsync(["deploy", path, "--host", url, "--name", name], { PLATFORM_TOKEN: developerToken });

const listenings = () => host.output().match(/platform host listening/g)?.length ?? 0;

/** Calls `boom` of `id`, which ends the server, and waits for the next server to listen. */
async function crash(id: string): Promise<void> {
  const before = listenings();
  const outcome = await running.call(id, "query", "boom").then(
    (response) => `status ${response.status}`,
    (error: Error) => `failed: ${error.message}`,
  );
  expect(outcome).not.toBe("status 200");
  await host.waitFor(new RegExp(`(platform host listening[\\s\\S]*){${before + 1}}`), 60_000);
}

it("a crash quarantines the deployment whatever it deploys next, and two of a developer's deployments the developer", async () => {
  const mallory = await developer("mallory");
  const alice = await developer("alice");
  for (const [path, name, as] of [
    ["fixtures/todo", "calm", mallory],
    [await crashingApp("one"), "m1", mallory],
    ["fixtures/todo", "alice-app", alice],
  ] as const) {
    const deployed = await deploy(path, name, as.token);
    expect(deployed.status, deployed.stderr).toBe(0);
  }

  await crash("m1");
  expect(host.output()).toMatch(/quarantining deployment m1 for 600 s: it crashed the server/);
  expect(host.output()).not.toMatch(/quarantining developer/);
  // Changed code for the crashed deployment is not even compiled: its top level could crash the host.
  const redeploy = await deploy(await crashingApp("two"), "m1", mallory.token);
  expect(redeploy.status).toBe(1);
  expect(redeploy.stderr).toMatch(
    /unavailable: Deployment m1 is quarantined for \d+ s: code deployed there crashed the host/,
  );
  const refused = await running.call("m1", "query", "boom");
  expect([refused.status, errorOf(refused).code]).toEqual([503, "unavailable"]);
  expect(Number(refused.headers["retry-after"])).toBeGreaterThan(500);
  // One crashing deployment does not stop its developer's others.
  expect((await running.call("calm", "query", "list")).status).toBe(200);

  // A second deployment of the same developer, with other bytes, crashes the host once more...
  const second = await deploy(await crashingApp("three"), "m2", mallory.token);
  expect(second.status, second.stderr).toBe(0);
  await crash("m2");
  expect(host.output()).toMatch(
    new RegExp(`quarantining developer ${mallory.id} for 600 s: 2 of their deployments crashed the server`),
  );
  // ...and then every deployment of that developer is refused, and so are their deploys.
  const calm = await running.call("calm", "query", "list");
  expect([calm.status, errorOf(calm).code]).toEqual([503, "unavailable"]);
  expect(errorOf(calm).message).toContain("requests to deployments of its developer crashed the host");
  const third = await deploy(await crashingApp("four"), "m3", mallory.token);
  expect(third.status).toBe(1);
  expect(third.stderr).toContain(`unavailable: Deployments of developer ${mallory.id} are quarantined for`);
  expect(host.output()).toMatch(/quarantined deployment calm until .*: deployments of developer/);

  // Another developer's deployment answers, and they may deploy.
  expect((await running.call("alice-app", "query", "list")).status).toBe(200);
  const alices = await deploy("fixtures/todo", "alice-two", alice.token);
  expect(alices.status, alices.stderr).toBe(0);
  const metrics = (
    await sendRequest(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })
  ).text();
  expect(metrics).toMatch(/^platform_quarantined_bundles 2$/m);
  expect(metrics).toMatch(/^platform_quarantined_deployments 2$/m);
  expect(metrics).toMatch(/^platform_quarantined_developers 1$/m);
  expect(host.output().match(/restarting in/g)).toHaveLength(2);
}, 240_000);
