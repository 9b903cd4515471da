/**
 * A quarantine follows the code's deployment and developer, not only its bytes. Against a real
 * `platform host` (supervisor and server processes) over real HTTP, hostile developers whose code
 * makes V8 give up on its isolate (ending the server process), in a call or at its top level when
 * deployed, try to crash the host again: with a changed bundle of the same deployment, and from a
 * second deployment of theirs. Other developers' deployments answer and deploy throughout.
 * `--quarantine 600` keeps every quarantine in force for the whole test, however slow the machine.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
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

/**
 * A capsule whose query `boom` ends the server process (or, `atTopLevel`, whose top level does:
 * its deploy does); `variant` changes its bytes.
 */
async function crashingApp(variant: string, atTopLevel = false): Promise<string> {
  const dir = join(running.dir, `crash-${variant}`);
  await mkdir(join(dir, "server"), { recursive: true });
  const boom = "new Array(2 ** 28).fill(1.5).length";
  await writeFile(
    join(dir, "server", "index.ts"),
    `import { capsule } from "platform/server";\n${atTopLevel ? `export const size = ${boom};\n` : ""}export default capsule({ schema: {}, queries: { boom: async () => ${boom}, variant: async () => "${variant}" } });\n`,
  );
  return dir;
}

const deploy = (path: string, name: string, developerToken: string) =>
  runCliAsync(["deploy", path, "--host", url, "--name", name], { PLATFORM_TOKEN: developerToken });

const listenings = () => host.output().match(/platform host listening/g)?.length ?? 0;

/** Runs `crashing`, which ends the server, and waits for the next server to listen. */
async function crashWith(crashing: () => Promise<string>): Promise<void> {
  const before = listenings();
  expect(await crashing()).not.toBe("status 200");
  await host.waitFor(new RegExp(`(platform host listening[\\s\\S]*){${before + 1}}`), 60_000);
}

const crashByCall = (id: string) =>
  crashWith(() =>
    running.call(id, "query", "boom").then(
      (response) => `status ${response.status}`,
      (error: Error) => `failed: ${error.message}`,
    ),
  );

const crashByDeploy = (path: string, id: string, developerToken: string) =>
  crashWith(async () => {
    const deployed = await deploy(path, id, developerToken);
    return deployed.status === 0 ? "status 200" : `deploy failed: ${deployed.stderr}`;
  });

const refusedCall = async (id: string, query = "boom") => {
  const response = await running.call(id, "query", query);
  expect([response.status, errorOf(response).code], id).toEqual([503, "unavailable"]);
  expect(Number(response.headers["retry-after"])).toBeGreaterThan(500);
  return errorOf(response).message;
};

it("a crash in a call holds the deployment's calls whatever it runs next, and its developer's after two; the fix stays deployable", async () => {
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

  await crashByCall("m1");
  expect(host.output()).toMatch(/quarantining deployment m1 for 600 s: it crashed the server/);
  expect(host.output()).not.toMatch(/quarantining developer|deploys for/);
  // The bytes that crashed it are refused in the developer's other deployments...
  const same = await deploy(await crashingApp("one"), "m1-copy", mallory.token);
  expect(same.status).toBe(1);
  expect(same.stderr).toMatch(/unavailable: This bundle is quarantined for \d+ s: it crashed the host/);
  // Another developer's copy of the same bytes is theirs: held only by its own crashes.
  const copy = await deploy(await crashingApp("one"), "alice-copy", alice.token);
  expect(copy.status, copy.stderr).toBe(0);
  // ...while changed code is taken (anyone may call a handler: its owner must be able to deploy a
  // fix), and the deployment's calls stay refused whatever it runs now.
  const changed = await deploy(await crashingApp("two"), "m1", mallory.token);
  expect(changed.status, changed.stderr).toBe(0);
  expect(await refusedCall("m1")).toContain("a request to it crashed the host");
  // One crashing deployment does not stop its developer's others.
  expect((await running.call("calm", "query", "list")).status).toBe(200);

  // A second deployment of the same developer, with other bytes, crashes the host once more...
  const second = await deploy(await crashingApp("three"), "m2", mallory.token);
  expect(second.status, second.stderr).toBe(0);
  await crashByCall("m2");
  expect(host.output()).toMatch(
    new RegExp(`quarantining developer ${mallory.id} for 600 s: 2 of their deployments crashed the server`),
  );
  // ...and then every deployment of that developer takes no calls, though they may still deploy.
  expect(await refusedCall("calm", "list")).toContain(
    "requests to deployments of its developer crashed the host",
  );
  // The restarted server names what it holds once it has listed its deployments, which may come
  // after it answered the call above.
  await vi.waitFor(
    () => expect(host.output()).toMatch(/quarantined deployment calm until .*: deployments of developer/),
    { timeout: 10_000 },
  );
  const fix = await deploy("fixtures/todo", "calm", mallory.token);
  expect(fix.status, fix.stderr).toBe(0);

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

it("a crash while deploying holds the deployment's deploys whatever the bundle, and its developer's after two", async () => {
  const dana = await developer("dana");
  const erin = await developer("erin");
  await crashByDeploy(await crashingApp("top-one", true), "d1", dana.token);
  expect(host.output()).toMatch(
    /quarantining deployment d1 and its deploys for 600 s: deploying it crashed the server/,
  );
  const again = await deploy(await crashingApp("top-two", true), "d1", dana.token);
  expect(again.status).toBe(1);
  expect(again.stderr).toMatch(
    /unavailable: Deployment d1 takes no deploys for \d+ s: deploying code to it crashed the host/,
  );
  // A deploy elsewhere is still taken after one crash...
  await crashByDeploy(await crashingApp("top-three", true), "d2", dana.token);
  expect(host.output()).toMatch(
    new RegExp(
      `quarantining developer ${dana.id} and their deploys for 600 s: 2 of their deployments crashed the server`,
    ),
  );
  // ...but after two, none of that developer's is.
  const any = await deploy("fixtures/todo", "d3", dana.token);
  expect(any.status).toBe(1);
  expect(any.stderr).toContain(`unavailable: Developer ${dana.id} can deploy again in`);
  const others = await deploy("fixtures/todo", "erin-app", erin.token);
  expect(others.status, others.stderr).toBe(0);
}, 240_000);
