/**
 * bench/suite (`npm run bench`): the platform against what a self-hosting user would otherwise run,
 * in ONE run, on the same todo-style workload over HTTP (get by id, list 50 by index, insert, a
 * page of 20, count a list): (a) this platform (isolate + budgets + transactions), (b) plain Koa +
 * classic-level without isolation, (c) plain Koa + better-sqlite3. Load comes from a separate
 * process (autocannon); ratios are printed. Then isolate cold start, memory per live isolate and how
 * many deployments one host keeps live in 2 GiB. Targets (issue 9): (a) >= 70% of (b)'s requests
 * per second, and within 1.5x of (c) on reads. The platform also runs on its PostgreSQL backend
 * (a private server on loopback) next to its embedded classic-level one.
 *
 *   npm run bench                 (BENCH_SECONDS per run, default 3; BENCH_ROUNDS interleaved rounds,
 *                                  default 3, each target's median run reported)
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { postgresBinDir, startLocalPostgres } from "../../scripts/local-postgres.js";
import { benchHost, evictedColdStarts, seededRows } from "../lib/bench-host.js";
import { percentile } from "../lib/percentile.js";
import { interleaved, type LoadResult, runLoad } from "../lib/run-load.js";
import { classicLevelPeer, type SeedRow, sqlitePeer } from "./peers.js";
import { pgInsertLine, pgTargetCell } from "./pg-targets.js";
import {
  inMeans,
  meanRatio,
  type OperationResult,
  SERVERS,
  SPREAD_INSERT,
  suiteTargetLines,
} from "./target-lines.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
/** Interleaved rounds per operation; each target's median run is reported. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 32;
const DENSITY_DEPLOYMENTS = Number(process.env.BENCH_DENSITY ?? 300);
const PG = SERVERS.postgres;

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-suite-"));
  const code = (await bundleCapsule("bench/suite/capsule")).code;
  const host = await benchHost(join(dir, "host"), code);
  let postgres: Awaited<ReturnType<typeof startLocalPostgres>> | undefined;
  let pgHost: Awaited<ReturnType<typeof benchHost>> | undefined;
  try {
    // Cold start of an evicted deployment (this capsule), then density: many live deployments. Both on
    // the freshly seeded host, before the other servers start and before any load: a process that has
    // served minutes of load keeps a larger heap, which is no part of what a deployment costs.
    const colds = await evictedColdStarts(host, (await seededRows(host))[0]?.id ?? "", 30);
    gc();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < DENSITY_DEPLOYMENTS; i++) {
      await host.deployments.deploy(`d${i}`, { code });
      await host.deployments.call(`d${i}`, {
        kind: "query",
        name: "count",
        argsJson: '{"list":"x"}',
        identity: null,
      });
    }
    gc();
    await new Promise((resolve) => setTimeout(resolve, 500));
    gc();
    const after = process.memoryUsage().rss;
    const perDeployment = (after - before) / DENSITY_DEPLOYMENTS;
    const live = host.deployments.pool.liveCount();
    const budget = 2 * 1024 ** 3;
    const fits = Math.floor((budget - before) / perDeployment);
    for (let i = 0; i < DENSITY_DEPLOYMENTS; i++)
      await host.deployments.remove(await host.deployments.require(`d${i}`));

    postgres = postgresBinDir() ? await startLocalPostgres() : undefined;
    if (!postgres) process.stderr.write("PostgreSQL is not installed: the PostgreSQL column is skipped.\n");
    pgHost = postgres ? await benchHost(join(dir, "pg-host"), code, postgres.url) : undefined;
    // Each platform host made its own ids; the peers start from the first host's rows.
    const rows = await seededRows(host);
    const pgRows = pgHost ? await seededRows(pgHost) : [];
    const [levelPeer, sqlite] = await Promise.all([classicLevelPeer(dir, rows), sqlitePeer(dir, rows)]);
    const targets: Array<{ name: string; base: string; rows: SeedRow[] }> = [
      { name: SERVERS.platform, base: `http://127.0.0.1:${host.port}`, rows },
      ...(pgHost ? [{ name: PG, base: `http://127.0.0.1:${pgHost.port}`, rows: pgRows }] : []),
      { name: SERVERS.level, base: `http://127.0.0.1:${levelPeer.port}`, rows },
      { name: SERVERS.sqlite, base: `http://127.0.0.1:${sqlite.port}`, rows },
    ];
    const listsOf = (of: SeedRow[]) => [...new Set(of.map((r) => r.list))];
    const pick = <T>(values: T[], n: number) =>
      Array.from({ length: n }, (_, i) => values[(i * 7919) % values.length] as T);
    const workload: Array<{
      op: string;
      path: string;
      read: boolean;
      spread?: boolean;
      bodies: (of: SeedRow[]) => string[];
    }> = [
      {
        op: "get by id",
        path: "/api/query/get",
        read: true,
        bodies: (of) => pick(of, 200).map((r) => JSON.stringify({ id: r.id })),
      },
      {
        op: "list 50 by index",
        path: "/api/query/list",
        read: true,
        bodies: (of) => listsOf(of).map((list) => JSON.stringify({ list })),
      },
      {
        op: "paginate (page of 20)",
        path: "/api/query/page",
        read: true,
        bodies: (of) =>
          listsOf(of).map((list) => JSON.stringify({ list, paginationOpts: { cursor: null, numItems: 20 } })),
      },
      {
        op: "count a list (500)",
        path: "/api/query/count",
        read: true,
        bodies: (of) => listsOf(of).map((list) => JSON.stringify({ list })),
      },
      {
        op: "insert",
        path: "/api/mutation/insert",
        read: false,
        bodies: (of) => listsOf(of).map((list, i) => JSON.stringify({ list, text: `new item ${i}` })),
      },
      {
        // Connections in step send the same list at once: this one spreads them over the lists.
        op: SPREAD_INSERT,
        path: "/api/mutation/insert",
        read: false,
        spread: true,
        bodies: (of) => listsOf(of).map((list, i) => JSON.stringify({ list, text: `new item ${i}` })),
      },
    ];
    const results: OperationResult[] = [];
    for (const { op, path, read, spread, bodies } of workload) {
      const byName = new Map(targets.map((target) => [target.name, target]));
      for (const target of targets)
        await runLoad(`${target.base}${path}`, bodies(target.rows), dir, 1, CONNECTIONS, undefined, spread); // warm-up
      const by: Record<string, LoadResult> = await interleaved(
        targets.map((target) => target.name),
        ROUNDS,
        async (name) => {
          const target = byName.get(name) as (typeof targets)[number];
          const result = await runLoad(
            `${target.base}${path}`,
            bodies(target.rows),
            dir,
            SECONDS,
            CONNECTIONS,
            undefined,
            spread,
          );
          process.stderr.write(`${op} on ${name}: ${Math.round(result.rps)} req/s\n`);
          return result;
        },
      );
      results.push({ op, read, spread: spread === true, by });
    }
    await levelPeer.close();
    await sqlite.close();

    const cpu = cpus()[0]?.model ?? "unknown CPU";
    let kernel = "";
    try {
      kernel = execFileSync("uname", ["-sr"], { encoding: "utf8" }).trim();
    } catch {
      kernel = process.platform;
    }
    const out: string[] = [];
    out.push(
      `bench/suite: ${cpus().length} cores (${cpu}), ${(totalmem() / 1024 ** 3).toFixed(0)} GiB, ${kernel}, Node ${process.version}; median of ${ROUNDS} interleaved runs of ${SECONDS} s per cell, ${CONNECTIONS} connections, autocannon in a separate process; ${rows.length} items in ${listsOf(rows).length} lists`,
    );
    out.push("");
    out.push(
      "| operation | (a) platform req/s (p50/p99 ms) | (a') platform on PostgreSQL | (b) koa+classic-level | (c) koa+better-sqlite3 | a/b | a/c | a'/a | a'/a target |",
    );
    out.push("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    const cell = (r: LoadResult) => `${Math.round(r.rps).toLocaleString("en-US")} (${r.p50}/${r.p99})`;
    for (const { op, by } of results) {
      const a = by.platform as LoadResult;
      const b = by[SERVERS.level] as LoadResult;
      const c = by[SERVERS.sqlite] as LoadResult;
      const p = by[PG];
      out.push(
        `| ${op} | ${cell(a)} | ${p ? cell(p) : "-"} | ${cell(b)} | ${cell(c)} | ${Math.round((a.rps / b.rps) * 100)}% | ${(a.rps / c.rps).toFixed(2)}x | ${p ? `${Math.round((p.rps / a.rps) * 100)}%` : "-"} | ${pgTargetCell(op, p ? p.rps / a.rps : undefined)} |`,
      );
    }
    const reads = results.filter((r) => r.read);
    out.push("");
    out.push(
      `geometric mean over all operations but the spread insert: a/b ${Math.round(meanRatio(inMeans(results), SERVERS.platform, SERVERS.level) * 100)}% (target >= 70%); on reads a/c ${meanRatio(reads, SERVERS.platform, SERVERS.sqlite).toFixed(2)}x (target: within 1.5x, i.e. >= 0.67x)`,
    );
    out.push(pgInsertLine(results.find((r) => r.op === "insert")?.by[PG]?.rps));
    const errors = results.flatMap((r) =>
      Object.entries(r.by)
        .filter(([, l]) => l.errors > 0 || l.non2xx > 0)
        .map(([n, l]) => `${r.op} on ${n}: ${l.errors} errors, ${l.non2xx} non-2xx`),
    );
    if (errors.length > 0) out.push(`failures during load: ${errors.join("; ")}`);
    out.push("");
    out.push(
      `isolate cold start (evicted deployment, this capsule): p50 ${percentile(colds, 50).toFixed(1)} ms, p90 ${percentile(colds, 90).toFixed(1)} ms`,
    );
    out.push(
      `memory per live deployment (isolate + records), ${DENSITY_DEPLOYMENTS} deployments, ${live} live: ${(perDeployment / 1024 ** 2).toFixed(2)} MiB RSS`,
    );
    out.push(
      `deployments one host keeps live in 2 GiB: about ${fits.toLocaleString("en-US")} (host base ${(before / 1024 ** 2).toFixed(0)} MiB RSS)`,
    );
    out.push("", ...suiteTargetLines(results));
    console.log(out.join("\n"));
  } finally {
    await host.close();
    await pgHost?.close();
    await postgres?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
