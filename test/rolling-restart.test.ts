/**
 * Rolling restarts and crashes of hosts on one PostgreSQL behind a load balancer, under load from
 * `platform/client` (mutations with idempotency keys and queries, over sync sockets and HTTP):
 * `SIGTERM` drains a host (calls in flight answered, sockets closed `1012`, exit 0) and the
 * clients carry on through the other host with no failed call and no mutation applied twice; a
 * `SIGKILL`ed host's unanswered mutations are retried through the other host and applied once.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { type LocalPostgres, postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { createClient, type PlatformClient } from "../sdk/client/node.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { type Balancer, startBalancer } from "./helpers/balancer.js";
import { type CliProcess, freePort, startCli } from "./helpers/cli.js";
import { fixtureCode } from "./helpers/host.js";

const installed = postgresBinDir() !== undefined;
if (!installed)
  console.warn("Rolling restart tests skipped: PostgreSQL is not installed and could not be installed.");

const ADMIN = "rolling-restart-admin-token";
let postgres: LocalPostgres;
let data: string;
let balancer: Balancer;

/** One `platform host` (supervisor and servers) on a fixed port, started again and again. */
interface Host {
  name: string;
  port: number;
  process?: CliProcess;
}

const hosts: Host[] = [];

async function start(host: Host): Promise<void> {
  host.process = startCli(
    [
      "host",
      "--port",
      String(host.port),
      "--data",
      join(data, host.name),
      "--database",
      postgres.url,
      "--request-quota",
      "0",
    ],
    { PLATFORM_ADMIN_TOKEN: ADMIN },
    { detached: true },
  );
  await host.process.waitFor(/platform host listening/, 120_000);
  const ready = await sendRequest(`http://localhost:${host.port}/readyz`);
  expect(ready.status).toBe(200);
}

/** Sends `SIGTERM` (as an operator or orchestrator does) and waits for the host to exit. */
async function drain(host: Host): Promise<{ code: number | null; output: string }> {
  const child = host.process?.child;
  if (!child) throw new Error(`${host.name} is not running`);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.kill("SIGTERM");
  // A hang guard, far beyond the drain's own bound: a host that never exits fails with its output.
  const code = await Promise.race([
    exited,
    new Promise<"hung">((resolve) => setTimeout(resolve, 120_000, "hung")),
  ]);
  if (code === "hung") throw new Error(`${host.name} did not exit after SIGTERM:\n${host.process?.output()}`);
  return { code, output: host.process?.output() ?? "" };
}

/** `SIGKILL`s the supervisor and its servers at once: a host that dies mid-call. */
async function kill(host: Host): Promise<void> {
  const child = host.process?.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    process.kill(-(child.pid as number), "SIGKILL");
  } catch {
    // already gone
  }
  await exited;
}

beforeAll(async () => {
  if (!installed) return;
  postgres = await startLocalPostgres();
  data = await mkdtemp(join(tmpdir(), "platform-rolling-"));
  for (const name of ["a", "b"]) hosts.push({ name, port: await freePort() });
  await Promise.all(hosts.map(start));
  balancer = await startBalancer(hosts.map((host) => host.port));
  const deployed = await sendRequest(`http://localhost:${balancer.port}/v1/deploys/ledger`, {
    method: "PUT",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ code: await fixtureCode("ledger") }),
  });
  expect(deployed.status, deployed.text()).toBe(201);
}, 240_000);

afterAll(async () => {
  await balancer?.close();
  for (const host of hosts) await kill(host);
  await postgres?.stop();
  if (data) await rm(data, { recursive: true, force: true });
});

/** What a load run saw: each mutation's tag that was answered, and every failed call. */
interface Outcome {
  answered: string[];
  failures: string[];
  queries: number;
}

/**
 * Clients of the deployment through the balancer until stopped: `socketClients` keep a live
 * query (so their mutations go over the socket), the others call over HTTP; each runs `parallel`
 * loops of a mutation with a unique tag, then a query.
 */
function startLoad(run: string, socketClients: number, httpClients: number, parallel: number) {
  const url = `http://ledger.localhost:${balancer.port}`;
  const outcome: Outcome = { answered: [], failures: [], queries: 0 };
  let stopped = false;
  const clients: PlatformClient[] = [];
  const loops: Promise<void>[] = [];
  /** Calls under way, for the hang guard's message. */
  const inFlight = new Set<string>();
  for (let c = 0; c < socketClients + httpClients; c++) {
    const client = createClient(url);
    clients.push(client);
    if (c < socketClients) client.subscribe("count", {}, () => {});
    for (let l = 0; l < parallel; l++)
      loops.push(
        (async () => {
          for (let i = 0; !stopped; i++) {
            const tag = `${run}-${c}-${l}-${i}`;
            inFlight.add(tag);
            try {
              const value = (await client.mutation("add", { tag })) as { tag: string };
              expect(value.tag).toBe(tag);
              outcome.answered.push(tag);
              await client.query("count", {});
              outcome.queries++;
            } catch (error) {
              outcome.failures.push(`${tag}: ${String(error)}`);
            }
            inFlight.delete(tag);
          }
        })(),
      );
  }
  const answeredAtLeast = async (n: number) => {
    const deadline = Date.now() + 120_000;
    while (outcome.answered.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(outcome.answered.length).toBeGreaterThanOrEqual(n);
  };
  return {
    outcome,
    answeredAtLeast,
    /** Waits for `more` answers after now: the load goes on. */
    progresses: (more: number) => answeredAtLeast(outcome.answered.length + more),
    stop: async () => {
      stopped = true;
      // Every call settles within the client's retry time; a hang guard well beyond it names the rest.
      const settled = await Promise.race([
        Promise.all(loops).then(() => true),
        new Promise<false>((resolve) => setTimeout(resolve, 3 * LIMITS.callRetryMs, false)),
      ]);
      if (!settled) throw new Error(`calls never settled: ${[...inFlight].join(", ")}`);
      for (const client of clients) client.close();
      return outcome;
    },
  };
}

/** Every entry's tag, read page by page through the balancer. */
async function storedTags(): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let cursor: string | null = null;
  do {
    const response = await sendRequest(`http://ledger.localhost:${balancer.port}/api/query/tags`, {
      method: "POST",
      body: JSON.stringify({ cursor }),
    });
    expect(response.status, response.text()).toBe(200);
    const page: { tags: string[]; next: string | null } = response.json<{
      value: { tags: string[]; next: string | null };
    }>().value;
    for (const tag of page.tags) counts.set(tag, (counts.get(tag) ?? 0) + 1);
    cursor = page.next;
  } while (cursor !== null);
  return counts;
}

/** Every answered mutation is stored exactly once, and nothing of `run` is stored twice. */
async function expectEachOnce(run: string, outcome: Outcome): Promise<void> {
  const stored = await storedTags();
  const twice = [...stored].filter(([tag, count]) => tag.startsWith(`${run}-`) && count > 1);
  expect(twice).toEqual([]);
  const missing = outcome.answered.filter((tag) => stored.get(tag) !== 1);
  expect(missing).toEqual([]);
}

describe.skipIf(!installed)("two hosts on one PostgreSQL behind a balancer", () => {
  it("restarts both, one after the other, under load with no failed call and no mutation applied twice", async () => {
    const [a, b] = hosts as [Host, Host];
    const load = startLoad("rolling", 3, 3, 2);
    await load.answeredAtLeast(60);
    for (const host of [a, b]) {
      const before = balancer.taken.get(host.port) ?? 0;
      const drained = await drain(host);
      expect(drained.code).toBe(0);
      expect(drained.output).toMatch(/platform host: draining/);
      // The other host carries the load alone.
      await load.progresses(40);
      await start(host);
      await load.progresses(40);
      expect(balancer.taken.get(host.port) ?? 0).toBeGreaterThan(before);
    }
    const outcome = await load.stop();
    expect(outcome.failures).toEqual([]);
    expect(outcome.queries).toBe(outcome.answered.length);
    await expectEachOnce("rolling", outcome);
  }, 600_000);

  it("retries a SIGKILLed host's unanswered mutations through the other host, applying each once", async () => {
    const [a] = hosts as [Host, Host];
    const load = startLoad("killed", 3, 3, 3);
    await load.answeredAtLeast(60);
    await kill(a);
    await load.progresses(80);
    const outcome = await load.stop();
    // Every call got an answer (from the surviving host) and each mutation landed exactly once.
    expect(outcome.failures).toEqual([]);
    await expectEachOnce("killed", outcome);
    await start(a);
  }, 600_000);
});
