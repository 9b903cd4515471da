/**
 * bench/peers (`npm run bench:peers`): the platform next to Cloudflare's workerd in ONE run, on
 * bench/suite's todo workload (10,000 items in 20 lists): get by id and list 50 over HTTP, loaded by
 * autocannon in a separate process, in interleaved rounds; then cold starts. workerd keeps the rows
 * in one Durable Object's SQLite storage (bench/peers/workerd/worker.js) and runs as its own process;
 * the platform is one embedded host (in this process) serving the bench capsule. The issue sets no
 * target against workerd: its ratios are printed for comparison only.
 *
 *   npm run bench:peers   (BENCH_SECONDS per run, default 3; BENCH_ROUNDS interleaved rounds, default 3)
 */

import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { benchHost, evictedColdStarts, seededRows } from "../lib/bench-host.js";
import { percentile } from "../lib/percentile.js";
import { interleaved, type LoadResult, runLoad } from "../lib/run-load.js";
import type { SeedRow } from "../suite/peers.js";
import { platformProcessStart } from "./platform-process.js";
import { newObjectColdStarts, post, type RunningWorkerd, startWorkerd } from "./workerd.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 32;
const COLD_ROUNDS = 30;
const RESTARTS = 5;

const ms = (values: number[]) =>
  `p50 ${percentile(values, 50).toFixed(1)} ms, p90 ${percentile(values, 90).toFixed(1)} ms`;

/** Both servers answer the same get and list alike, or the comparison is void. */
async function checkAlike(platform: string, workerd: string, rows: SeedRow[]): Promise<void> {
  const probes: Array<[string, unknown]> = [
    ["/api/query/get", { id: rows[0]?.id }],
    ["/api/query/get", { id: rows[rows.length - 1]?.id }],
    ["/api/query/get", { id: "no-such-id" }],
    ["/api/query/list", { list: rows[0]?.list }],
  ];
  for (const [path, body] of probes) {
    const [a, b] = await Promise.all([post(platform, path, body), post(workerd, path, body)]);
    if (!isDeepStrictEqual(a, b))
      throw new Error(
        `${path} ${JSON.stringify(body)} differs: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`,
      );
  }
}

function machine(): string {
  let kernel = process.platform as string;
  try {
    kernel = execFileSync("uname", ["-sr"], { encoding: "utf8" }).trim();
  } catch {}
  return `${cpus().length} cores (${cpus()[0]?.model ?? "unknown CPU"}), ${(totalmem() / 1024 ** 3).toFixed(0)} GiB, ${kernel}, Node ${process.version}`;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-peers-"));
  const code = (await bundleCapsule("bench/suite/capsule")).code;
  let host: Awaited<ReturnType<typeof benchHost>> | undefined = await benchHost(join(dir, "host"), code);
  let workerd: RunningWorkerd | undefined;
  try {
    const rows = await seededRows(host);
    const firstId = rows[0]?.id ?? "";
    const lists = [...new Set(rows.map((r) => r.list))];
    const platformBase = `http://127.0.0.1:${host.port}`;
    // Cold starts first, on freshly seeded servers, before any load.
    const platformCold = await evictedColdStarts(host, firstId, COLD_ROUNDS);
    const platformColdHttp = await evictedColdStarts(host, firstId, COLD_ROUNDS, (argsJson) =>
      post(platformBase, "/api/query/get", JSON.parse(argsJson)),
    );
    workerd = await startWorkerd(join(dir, "workerd"), rows, firstId);
    const workerdBase = `http://127.0.0.1:${workerd.port}`;
    await checkAlike(platformBase, workerdBase, rows);
    const objectCold = await newObjectColdStarts(workerd.port, COLD_ROUNDS, "before");

    const pick = <T>(values: T[], n: number) =>
      Array.from({ length: n }, (_, i) => values[(i * 7919) % values.length] as T);
    const workload = [
      {
        op: "get by id",
        path: "/api/query/get",
        bodies: pick(rows, 200).map((r) => JSON.stringify({ id: r.id })),
      },
      {
        op: "list 50 by index",
        path: "/api/query/list",
        bodies: lists.map((list) => JSON.stringify({ list })),
      },
    ];
    const bases: Record<"platform" | "workerd", string> = { platform: platformBase, workerd: workerdBase };
    const names = ["platform", "workerd"] as const;
    const results: Array<{ op: string; by: Record<(typeof names)[number], LoadResult> }> = [];
    for (const { op, path, bodies } of workload) {
      for (const name of names) await runLoad(`${bases[name]}${path}`, bodies, dir, 1, CONNECTIONS); // warm-up
      const by = await interleaved(names, ROUNDS, async (name) => {
        const result = await runLoad(`${bases[name]}${path}`, bodies, dir, SECONDS, CONNECTIONS);
        process.stderr.write(`${op} on ${name}: ${Math.round(result.rps)} req/s\n`);
        return result;
      });
      results.push({ op, by });
    }
    await workerd.close();
    workerd = undefined;
    // workerd restarted over the seeded storage: process, config, script, object and SQLite file.
    const restarts: number[] = [];
    for (let i = 0; i < RESTARTS; i++) {
      const again = await startWorkerd(join(dir, "workerd"), [], firstId);
      restarts.push(again.startMs);
      await again.close();
    }
    // The platform's own process started over its seeded data folder, the same number of times.
    await host.close();
    host = undefined;
    const platformStarts: number[] = [];
    for (let i = 0; i < RESTARTS; i++)
      platformStarts.push(await platformProcessStart(join(dir, "host"), firstId));

    const out: string[] = [];
    out.push(
      `bench/peers: ${machine()}; median of ${ROUNDS} interleaved runs of ${SECONDS} s per cell, ${CONNECTIONS} connections, autocannon in a separate process; ${rows.length} items in ${lists.length} lists`,
    );
    out.push("");
    out.push(
      "| operation | platform req/s (p50/p99 ms) | workerd + Durable Object SQLite | platform/workerd |",
    );
    out.push("| --- | --- | --- | --- |");
    const cell = (r: LoadResult) => `${Math.round(r.rps).toLocaleString("en-US")} (${r.p50}/${r.p99})`;
    for (const { op, by } of results)
      out.push(
        `| ${op} | ${cell(by.platform)} | ${cell(by.workerd)} | ${(by.platform.rps / by.workerd.rps).toFixed(2)}x |`,
      );
    const errors = results.flatMap((r) =>
      Object.entries(r.by)
        .filter(([, l]) => l.errors > 0 || l.non2xx > 0)
        .map(([n, l]) => `${r.op} on ${n}: ${l.errors} errors, ${l.non2xx} non-2xx`),
    );
    if (errors.length > 0) out.push(`failures during load: ${errors.join("; ")}`);
    out.push("");
    out.push("| cold start | what it includes | times |");
    out.push("| --- | --- | --- |");
    out.push(
      `| platform, evicted deployment, in process | new isolate, bundle from the code cache, first get by id (as bench/suite) | ${ms(platformCold)} |`,
    );
    out.push(
      `| platform, evicted deployment, over HTTP | the same plus the HTTP round trip | ${ms(platformColdHttp)} |`,
    );
    out.push(
      `| workerd, new Durable Object | first get by id to a never-used object: a new object in the running isolate, a new SQLite file | ${ms(objectCold)} |`,
    );
    out.push(
      `| workerd, process start | spawn of workerd over the seeded storage until its first get by id is answered (${RESTARTS} starts) | ${ms(restarts)} |`,
    );
    out.push(
      `| platform, process start | spawn of \`platform host\` over the seeded data until its first get by id is answered (${RESTARTS} starts) | ${ms(platformStarts)} |`,
    );
    out.push("");
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
    for (const { op, by } of results)
      out.push(
        `target | ${op}, platform/workerd req/s | ${ratio(by.platform.rps, by.workerd.rps)} | none | no target`,
      );
    out.push(
      `target | cold start, platform evicted deployment over HTTP, p50 | ${percentile(platformColdHttp, 50).toFixed(1)} ms | none | no target`,
    );
    out.push(
      `target | cold start, workerd new Durable Object, p50 | ${percentile(objectCold, 50).toFixed(1)} ms | none | no target`,
    );
    out.push(
      `target | cold start, workerd process start, p50 | ${percentile(restarts, 50).toFixed(1)} ms | none | no target`,
    );
    out.push(
      `target | cold start, platform process start, p50 | ${percentile(platformStarts, 50).toFixed(1)} ms | none | no target`,
    );
    out.push(
      `target | cold start, platform/workerd process start, p50 | ${ratio(percentile(platformStarts, 50), percentile(restarts, 50))} | none | no target`,
    );
    out.push(
      `target | cold start, platform evicted / workerd new Durable Object, p50 | ${ratio(percentile(platformColdHttp, 50), percentile(objectCold, 50))} | none | no target`,
    );
    console.log(out.join("\n"));
  } finally {
    await workerd?.close();
    await host?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
