/**
 * `GET /metrics` after known traffic: a real host on loopback, real isolates and HTTP. Counts
 * calls by deployment, kind and status (refusals included), latency, a read-budget failure, a CPU
 * stop, isolates started and evicted, a quarantine, live subscriptions and pushes, storage bytes
 * and the restart count; the operator token guards it on the control plane, and the loopback
 * port serves it without one. On PostgreSQL it shows the connection pools.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type HttpResponse, localhostLookup, sendRequest } from "../cli/http.js";
import { Quarantine, quarantine } from "../host/deployments/index.js";
import { DEFAULT_ISOLATE_LIMITS } from "../host/isolates/index.js";
import { type LocalPostgres, postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { fixtureCode, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, table, number } from "platform/server";
export default capsule({
  schema: { items: table({ n: number() }) },
  queries: {
    count: async (ctx) => ctx.db.items.count(),
    all: async (ctx) => ctx.db.items.collect(),
    misses: async (ctx) => { for (let i = 0; i < 5000; i++) await ctx.db.items.get(String(i).padStart(22, "A")); },
    spin: async () => { for (;;) {} },
  },
  mutations: {
    seed: async (ctx, args: { n: number }) => { for (let i = 0; i < args.n; i++) await ctx.db.items.insert({ n: i }); },
  },
});
`;

/** The value of sample `name{labels}` in a Prometheus text exposition, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.keys(found).length === Object.keys(labels).length)
      if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

const errorCode = (response: HttpResponse) => response.json<{ error: { code: string } }>().error.code;

describe("GET /metrics", () => {
  let host: TestHost;
  const scrape = async () => {
    const response = await host.admin("/metrics", "GET");
    expect(response.status, response.text()).toBe(200);
    return response.text();
  };

  beforeAll(async () => {
    // One live isolate at most: deploying a second deployment evicts the first one's. CPU time for
    // `misses` (4,097 reads) and `seed` on a busy machine, which a CPU stop must not end: `spin`
    // still meets the limit, after 4 s.
    host = await startTestHost({
      metricsPort: 0,
      serverRestarts: 3,
      pool: { maxLive: 1, limits: { ...DEFAULT_ISOLATE_LIMITS, cpuMs: 4000, wallMs: 30_000 } },
    });
    expect((await host.deployCode("m", await sourceCode(CAPSULE))).status).toBe(201);
  });
  afterAll(async () => {
    quarantine.replace(Quarantine.parse({}));
    await host?.dispose();
  });

  it("needs the operator token on the control plane, none on the loopback port", async () => {
    const none = await sendRequest(`${host.url}/metrics`);
    expect([none.status, errorCode(none)]).toEqual([401, "unauthorized"]);
    const unknown = await host.admin("/metrics", "GET", undefined, "not-a-token");
    expect([unknown.status, errorCode(unknown)]).toEqual([403, "forbidden"]);
    const developer = (await host.admin("/v1/developers", "POST", { name: "dev" })).json<{ token: string }>();
    const refused = await host.admin("/metrics", "GET", undefined, developer.token);
    expect([refused.status, errorCode(refused)]).toEqual([403, "forbidden"]);

    const operator = await host.admin("/metrics", "GET");
    expect(operator.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sample(operator.text(), "platform_server_restarts_total")).toBe(3);

    const local = await sendRequest(`http://127.0.0.1:${host.metricsPort}/metrics`);
    expect(local.status).toBe(200);
    expect(sample(local.text(), "platform_server_restarts_total")).toBe(3);
    const elsewhere = await sendRequest(`http://127.0.0.1:${host.metricsPort}/v1/deploys`);
    expect([elsewhere.status, errorCode(elsewhere)]).toEqual([404, "not_found"]);
  });

  it("counts calls by deployment, kind and status, their latency and budget failures", async () => {
    for (let i = 0; i < 3; i++) expect((await host.call("m", "query", "count")).status).toBe(200);
    expect((await host.call("m", "mutation", "seed", { n: 1001 })).status).toBe(200);
    expect(errorCode(await host.call("m", "query", "all"))).toBe("limit_exceeded");
    expect(errorCode(await host.call("m", "query", "misses"))).toBe("limit_exceeded");
    expect(errorCode(await host.call("m", "query", "nope"))).toBe("not_found");
    const text = await scrape();
    const calls = (kind: string, status: string) =>
      sample(text, "platform_calls_total", { deployment: "m", kind, status });
    expect(calls("query", "ok")).toBe(3);
    expect(calls("mutation", "ok")).toBe(1);
    expect(calls("query", "limit_exceeded")).toBe(2);
    expect(calls("query", "not_found")).toBe(1);
    // Refused calls are counted, not timed.
    const timed = { deployment: "m", kind: "query" };
    expect(sample(text, "platform_call_duration_seconds_count", timed)).toBe(5);
    expect(sample(text, "platform_call_duration_seconds_bucket", { ...timed, le: "+Inf" })).toBe(5);
    expect(sample(text, "platform_call_duration_seconds_count", { deployment: "m", kind: "mutation" })).toBe(
      1,
    );
    expect(
      sample(text, "platform_budget_limit_failures_total", { deployment: "m", budget: "rowsReturned" }),
    ).toBe(1);
    expect(
      sample(text, "platform_budget_limit_failures_total", { deployment: "m", budget: "rangesRead" }),
    ).toBe(1);
  });

  it("counts a CPU stop, isolates started and evicted, and the isolates live", async () => {
    const before = await scrape();
    const started = sample(before, "platform_isolates_started_total") as number;
    expect(started).toBeGreaterThanOrEqual(1);
    expect(errorCode(await host.call("m", "query", "spin"))).toBe("timeout");
    expect((await host.call("m", "query", "count")).status).toBe(200);
    // A second deployment goes live: beyond maxLive, the first one's isolate is evicted.
    expect((await host.deployFixture("other", "todo")).status).toBe(201);
    const after = await scrape();
    expect(sample(after, "platform_calls_total", { deployment: "m", kind: "query", status: "timeout" })).toBe(
      1,
    );
    expect(sample(after, "platform_isolate_limit_breaches_total", { deployment: "m", limit: "cpu" })).toBe(1);
    // Stopped with fewer than LIMITS.breachForgivenCalls answers before: held to the shared slots.
    expect(sample(after, "platform_breached_deployments", { deployment: "m" })).toBe(1);
    expect(sample(after, "platform_breached_deployments", { deployment: "other" })).toBeUndefined();
    // A fresh isolate after the stop, and the other deployment's.
    expect(sample(after, "platform_isolates_started_total")).toBeGreaterThanOrEqual(started + 2);
    expect(sample(after, "platform_isolates_evicted_total", { reason: "capacity" })).toBeGreaterThanOrEqual(
      1,
    );
    expect(sample(after, "platform_isolates_live")).toBe(1);
    expect(sample(after, "platform_execution_slots_busy")).toBe(0);
    // Each deploy compiled its bundle; the fresh isolate after the stop compiled from the cache.
    expect(sample(after, "platform_code_cache_compiles_total", { result: "miss" })).toBeGreaterThanOrEqual(2);
    expect(sample(after, "platform_code_cache_compiles_total", { result: "hit" })).toBeGreaterThanOrEqual(1);
  });

  it("shows what is quarantined and counts the calls it refuses; a deleted deployment's series go", async () => {
    expect((await host.deployFixture("q", "counter")).status).toBe(201);
    const artifact = (await host.admin("/v1/deploys/q", "GET")).json<{ artifact: string }>().artifact;
    const until = Date.now() + 60_000;
    quarantine.replace(
      Quarantine.parse({
        calls: {
          bundles: { [artifact]: until },
          deployments: { q: until, gone: until },
          owners: { dev_x: until },
        },
      }),
    );
    expect(errorCode(await host.call("q", "query", "value"))).toBe("unavailable");
    let text = await scrape();
    expect(sample(text, "platform_quarantined_bundles")).toBe(1);
    expect(sample(text, "platform_quarantined_deployments")).toBe(2);
    expect(sample(text, "platform_quarantined_developers")).toBe(1);
    expect(
      sample(text, "platform_calls_total", { deployment: "q", kind: "query", status: "unavailable" }),
    ).toBe(1);
    quarantine.replace(Quarantine.parse({}));
    expect((await host.admin("/v1/deploys/q", "DELETE")).status).toBe(204);
    text = await scrape();
    expect(sample(text, "platform_quarantined_bundles")).toBe(0);
    expect(text).not.toContain('deployment="q"');
  });

  it("keeps no series of a deployment deleted while its calls ran", async () => {
    // A call settling after the deletion made the deployment's series anew, for good: a developer
    // deleting deployments with calls in flight grew every scrape without bound.
    expect((await host.deployFixture("h", "fairness")).status).toBe(201);
    const hanging = host.call("h", "query", "hang");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await host.admin("/v1/deploys/h", "DELETE")).status).toBe(204);
    expect((await hanging).status).toBeGreaterThanOrEqual(500);
    expect(await scrape()).not.toContain('deployment="h"');
  });

  it("counts live subscriptions and the results pushed to them", async () => {
    expect((await host.deployFixture("l", "todo")).status).toBe(201);
    const ws = new WebSocket(`${host.deploymentUrl("l").replace("http", "ws")}/api/sync`, {
      lookup: localhostLookup,
    } as WebSocket.ClientOptions);
    const values: unknown[] = [];
    const nextValue = () =>
      new Promise<void>((resolve) =>
        ws.once("message", (data) => resolve(void values.push(JSON.parse(String(data))))),
      );
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const first = nextValue();
    ws.send(JSON.stringify({ type: "subscribe", id: "s", name: "count", args: {} }));
    await first;
    const second = nextValue();
    expect((await host.call("l", "mutation", "add", { text: "x" })).status).toBe(200);
    await second;
    const text = await scrape();
    expect(sample(text, "platform_live_subscriptions", { deployment: "l" })).toBe(1);
    expect(sample(text, "platform_live_pushes_total", { deployment: "l" })).toBe(2);
    ws.close();
    await new Promise((resolve) => ws.once("close", resolve));
  });

  it("shows stored bytes by quota owner", async () => {
    const owner = (await host.admin("/v1/developers", "POST", { name: "owner" })).json<{ id: string }>();
    expect(
      (await host.admin("/v1/deploys", "POST", { id: "f", code: await fixtureCode("todo"), owner: owner.id }))
        .status,
    ).toBe(201);
    const { token } = (await host.admin("/v1/deploys/f/sessions", "POST", { email: "a@example.com" })).json<{
      token: string;
    }>();
    const upload = await sendRequest(`${host.deploymentUrl("f")}/storage`, {
      method: "POST",
      headers: { "content-type": "text/plain", authorization: `Bearer ${token}` },
      body: Buffer.from("hello"),
    });
    expect(upload.status, upload.text()).toBe(201);
    // 5 bytes, counted as a file's least (LIMITS.storageBytesPerFile).
    expect(sample(await scrape(), "platform_storage_bytes", { owner: owner.id })).toBe(
      LIMITS.storageBytesPerFile,
    );
  });
});

describe.skipIf(postgresBinDir() === undefined)("GET /metrics on PostgreSQL", () => {
  let server: LocalPostgres;
  beforeAll(async () => {
    server = await startLocalPostgres();
  }, 60_000);
  afterAll(() => server?.stop());

  it("shows each connection pool's size and use", async () => {
    const host = await startTestHost({ database: server.url });
    try {
      const text = (await host.admin("/metrics", "GET")).text();
      expect(sample(text, "platform_postgres_connections_max", { pool: "snapshots" })).toBe(28);
      expect(sample(text, "platform_postgres_connections_max", { pool: "direct" })).toBe(4);
      expect(sample(text, "platform_postgres_connections", { pool: "direct" })).toBeGreaterThanOrEqual(1);
      expect(sample(text, "platform_postgres_waiting", { pool: "locks" })).toBe(0);
    } finally {
      await host.dispose();
    }
  }, 120_000);
});
