/**
 * bench/isolates: in ONE run, requests per second for a get-by-id query over HTTP
 *   (a) through the isolate (this platform),
 *   (b) the same Koa route calling host/db directly, no isolate,
 *   (c) a plain Koa + classic-level handler,
 *   (d) a plain Node `http` server over raw classic-level (the embedded path's floor);
 * the host's CPU per row of a query returning 1,000 rows, beside (c) and (d) answering the same
 * 1,000 rows; plus cold start (p50, with a breakdown by phase) of an evicted deployment with a ~500 KB bundle,
 * memory per idle live isolate, the first request to each deployment after a host restart with
 * and without the host's code-cache files, and host start-up with 10 against 1,000 deployments.
 * Load comes from a separate process. Targets: (a) >= 70% of (b) and >= 80% of (d); at most 2 µs of
 * host CPU per row listed; cold start p50 <= 3 ms; < 3 MB per idle isolate; start-up that does not
 * grow with the number of deployments. Each is printed as a target line (bench/lib/targets.ts).
 *
 *   npm run bench:isolates
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { startHost } from "../../dist/host/host.js";
import { gcPausesLine, withGcTime } from "../lib/gc-time.js";
import { percentile } from "../lib/percentile.js";
import { interleaved, runLoad } from "../lib/run-load.js";
import { percent, targetLine } from "../lib/targets.js";
import { afterRestart, coldStarts, startupTimes, v8Floor } from "./cold-start.js";
import { directPeer, LIST_PATH, plainPeers } from "./peers.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
/** Interleaved rounds of the three load targets; each target's median run is reported. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ROWS = 1000;
/** Distinct ~500 KB deployments whose first request after a host restart is timed. */
const RESTARTED = Number(process.env.BENCH_RESTARTED ?? 20);
/** Deployments of the host whose start-up is timed against one with 10. */
const MANY = Number(process.env.BENCH_MANY_DEPLOYMENTS ?? 1000);

const CAPSULE = `import { capsule, string, number, table } from "platform/server";
export default capsule({
  schema: { items: table({ title: string(), n: number() }) },
  queries: {
    get: async (ctx, args) => ctx.db.items.get(args.id),
    list: async (ctx) => ctx.db.items.take(1000),
  },
  mutations: { seed: async (ctx, args) => { const ids = []; for (let i = 0; i < args.count; i++) ids.push(await ctx.db.items.insert({ title: "item " + i + " lorem ipsum", n: i })); return ids; } },
});
`;

function bigCapsule(): string {
  // ~500 KB shaped like a real bundle: one default export; the bulk is module-internal functions
  // (as bundled libraries are), all referenced so nothing is tree-shaken.
  const parts: string[] = [];
  for (let i = 0; i < 3000; i++)
    parts.push(
      `function helper${i}(x: number): number { return (x * ${i + 1}) % 97 + "${"abcdefghij".repeat(8)}".length; }`,
    );
  return `import { capsule } from "platform/server";\n${parts.join("\n")}\nconst all = [${Array.from({ length: 3000 }, (_, i) => `helper${i}`).join(",")}];\nexport default capsule({ schema: {}, queries: { ping: async () => all.length } });\n`;
}

async function writeCapsule(dir: string, source: string): Promise<string> {
  await mkdir(join(dir, "server"), { recursive: true });
  await writeFile(join(dir, "server", "index.ts"), source);
  return (await bundleCapsule(dir)).code;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-iso-"));
  // Dev mode routes every Host to one deployment, so the load generator can target 127.0.0.1.
  const host = await startHost({
    requestQuota: false,
    data: join(dir, "host"),
    port: 0,
    domain: "localhost",
    adminToken: randomBytes(8).toString("hex"),
    devDeployment: "bench",
    logDestination: false,
  });
  // Cold start of an evicted deployment with a ~500 KB bundle.
  const bigCode = await writeCapsule(join(dir, "big"), bigCapsule());
  await host.deployments.deploy("big", { code: bigCode });
  const cold = await coldStarts(host, "big", 30);
  const warm: number[] = [];
  for (let i = 0; i < 30; i++) {
    const started = process.hrtime.bigint();
    await host.deployments.call("big", { kind: "query", name: "ping", argsJson: "{}", identity: null });
    warm.push(Number(process.hrtime.bigint() - started) / 1e6);
  }

  await host.deployments.deploy("bench", { code: await writeCapsule(join(dir, "bench"), CAPSULE) });
  const seeded = await host.deployments.call("bench", {
    kind: "mutation",
    name: "seed",
    argsJson: JSON.stringify({ count: ROWS }),
    identity: null,
  });
  const ids = JSON.parse(seeded.valueJson) as string[];
  const bodies = ids.slice(0, 200).map((id) => JSON.stringify({ id }));

  // (b), (c) and (d): the same lookups without the isolate, or without the platform (peers.ts).
  const direct = await directPeer(await host.deployments.db.deployment("bench"));
  const plain = await plainPeers(dir, ids);

  // Cold start and memory first, on a settled process; the load runs come last.
  // Memory per idle live isolate: 50 deployments of the small capsule, each answered once.
  const smallCode = await writeCapsule(join(dir, "small"), CAPSULE);
  const N = 50;
  for (let i = 0; i < N; i++) await host.deployments.deploy(`m${i}`, { code: smallCode });
  for (let i = 0; i < N; i++)
    await host.deployments.call(`m${i}`, {
      kind: "query",
      name: "get",
      argsJson: '{"id":"x"}',
      identity: null,
    });
  let heap = 0;
  for (let i = 0; i < N; i++) heap += host.deployments.pool.runner(`m${i}`, "").heapBytes();
  const rssBefore = process.memoryUsage().rss;
  for (let i = 0; i < N; i++) host.deployments.pool.runner(`m${i}`, "").evict();
  global.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const rssAfter = process.memoryUsage().rss;

  // Each load run also measures this process's CPU per request (user + system, all threads),
  // and the main thread's collection pauses per request (bench/lib/gc-time.ts).
  const measured = async (port: number, path = "/api/query/get", sent = bodies) => {
    const before = process.cpuUsage();
    const result = await withGcTime(() => runLoad(`http://127.0.0.1:${port}${path}`, sent, dir, SECONDS));
    const used = process.cpuUsage(before);
    const requests = Math.max(1, result.rps * SECONDS);
    return Object.assign(result, {
      cpuUs: (used.user + used.system) / requests,
      minorGcUs: (result.gc.minorMs * 1000) / requests,
      majorGcUs: (result.gc.majorMs * 1000) / requests,
    });
  };
  const ports = { a: host.port, b: direct.port, c: plain.koaPort, d: plain.barePort };
  for (const port of Object.values(ports))
    await runLoad(`http://127.0.0.1:${port}/api/query/get`, bodies, dir, 1); // warm-up
  const by = await interleaved(["a", "b", "c", "d"] as const, ROUNDS, (name) => measured(ports[name]));
  const [viaIsolate, viaDb, viaPlain, viaBare] = [by.a, by.b, by.c, by.d];
  // A query returning all 1,000 rows: the host's CPU per request over the rows, beside the plain
  // servers answering the same rows.
  const listPaths = { a: "/api/query/list", c: LIST_PATH, d: LIST_PATH };
  for (const name of ["a", "c", "d"] as const)
    await runLoad(`http://127.0.0.1:${ports[name]}${listPaths[name]}`, ["{}"], dir, 1); // warm-up
  const lists = await interleaved(["a", "c", "d"] as const, ROUNDS, (name) =>
    measured(ports[name], listPaths[name], ["{}"]),
  );
  const perRowUs = lists.a.cpuUs / ROWS;
  const floor = v8Floor(bigCode, 30);

  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);
  console.log(
    `bench/isolates on ${process.platform} ${process.arch}, Node ${process.version}; median of ${ROUNDS} interleaved runs of ${SECONDS} s per target, 32 connections, load from a separate process`,
  );
  console.log("target                                   req/s     p50 ms  p99 ms  host CPU µs/req");
  for (const [name, r] of [
    ["(a) platform: HTTP -> isolate -> db", viaIsolate],
    ["(b) same Koa route -> host/db, no isolate", viaDb],
    ["(c) plain Koa + classic-level", viaPlain],
    ["(d) plain Node http + classic-level", viaBare],
  ] as const) {
    console.log(
      `${name.padEnd(42)}${r.rps.toFixed(0).padStart(7)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${r.cpuUs.toFixed(0).padStart(8)}${r.non2xx || r.errors ? `  (errors ${r.errors}, non-2xx ${r.non2xx})` : ""}`,
    );
  }
  console.log(gcPausesLine(Object.entries({ a: viaIsolate, b: viaDb, c: viaPlain, d: viaBare })));
  console.log(
    `ratio (a)/(b): ${percent(viaIsolate.rps / viaDb.rps)}   (a)/(c): ${percent(viaIsolate.rps / viaPlain.rps)}   (a)/(d): ${percent(viaIsolate.rps / viaBare.rps)}`,
  );
  for (const [name, r] of [
    ["list 1,000 rows through the isolate", lists.a],
    ["the same rows, plain Koa + classic-level", lists.c],
    ["the same rows, plain Node http + classic-level", lists.d],
  ] as const)
    console.log(
      `${name}: ${r.rps.toFixed(0)} req/s, host CPU ${(r.cpuUs / 1000).toFixed(2)} ms per request, ${(r.cpuUs / ROWS).toFixed(2)} µs per row`,
    );
  console.log(
    `cold start, evicted deployment, ${(bigCode.length / 1024).toFixed(0)} KB bundle, 50 ms after its eviction: ${cold.summary()} (warm call p50 ${percentile(warm, 50).toFixed(2)} ms)`,
  );
  console.log(`  phases (p50 ms): ${cold.breakdown()}`);
  console.log(
    `  V8 alone, synchronously, same bundle and cache: deserialize ${floor.deserializeMs.toFixed(2)} ms + top level ${floor.runMs.toFixed(2)} ms = ${(floor.deserializeMs + floor.runMs).toFixed(2)} ms (the floor under a cold start)`,
  );
  console.log(
    `memory per idle live isolate: ${mb(heap / N)} MB V8 heap; ${mb((rssBefore - rssAfter) / N)} MB RSS freed per isolate on eviction`,
  );

  await host.close();
  await direct.close();
  await plain.close();

  const restarted = await afterRestart((i) => `${bigCode}\n// variant ${i}\n`, RESTARTED, 2);
  console.log(
    `first request to each of ${RESTARTED} deployments (${(bigCode.length / 1024).toFixed(0)} KB bundles) after a restart, 2 restarts each, interleaved:`,
  );
  for (const [name, run] of [
    ["with the host's code-cache files", restarted.cached],
    ["without (compiled from source)", restarted.uncached],
  ] as const)
    console.log(`  ${name}: ${run.summary()}\n    phases (p50 ms): ${run.breakdown()}`);
  const startup = await startupTimes(smallCode, 10, MANY, 5);
  console.log(
    `host start-up: ${startup.map(({ size, ms }) => `${size} deployments ${ms.toFixed(0)} ms`).join(", ")}`,
  );
  const coldP50 = percentile(cold.totals, 50);
  type Startup = { size: number; ms: number };
  const few = startup[0] as Startup;
  const many = startup.at(-1) as Startup;
  const idleMb = heap / N / 1024 / 1024;
  console.log(
    [
      "",
      targetLine(
        "get by id, isolate / same route without it (a/b)",
        percent(viaIsolate.rps / viaDb.rps),
        ">= 70%",
        viaIsolate.rps >= 0.7 * viaDb.rps,
      ),
      targetLine(
        "get by id, platform / plain Node http + classic-level (a/d)",
        percent(viaIsolate.rps / viaBare.rps),
        ">= 80%",
        viaIsolate.rps >= 0.8 * viaBare.rps,
      ),
      targetLine("list 1,000: host CPU per row", `${perRowUs.toFixed(2)} µs`, "<= 2 µs", perRowUs <= 2),
      targetLine(
        `cold start p50, evicted deployment, ${(bigCode.length / 1024).toFixed(0)} KB bundle`,
        `${coldP50.toFixed(2)} ms`,
        "<= 3 ms",
        coldP50 <= 3,
      ),
      targetLine("V8 heap per idle live isolate", `${idleMb.toFixed(2)} MB`, "< 3 MB", idleMb < 3),
      targetLine(
        `host start-up, ${many.size} against ${few.size} deployments`,
        `${many.ms.toFixed(0)} against ${few.ms.toFixed(0)} ms`,
        "does not grow (within 1.5x + 10 ms)",
        many.ms <= 1.5 * few.ms + 10,
      ),
    ].join("\n"),
  );
  await rm(dir, { recursive: true, force: true });
}

await main();
