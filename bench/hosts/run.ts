/**
 * bench/hosts (`npm run bench:hosts`): two `platform host` processes on one PostgreSQL against one,
 * each host pinned to its own core (`taskset`), the load generator (autocannon, separate processes)
 * and PostgreSQL sharing the machine. Measures calls per second of get by id and insert on one
 * host and on both (the load split across them), CPU per call of the hosts, of PostgreSQL and of
 * the load generator (from /proc), and statements per call (pg_stat_statements); then prints the
 * model that predicts 4, 16 and 64 hosts. Target (issue text): two hosts >= 1.6x one on get by id.
 *
 *   npm run bench:hosts   (BENCH_SECONDS per run, default 3; BENCH_ROUNDS interleaved rounds,
 *                          default 3, median run kept; BENCH_DB_CORES database sizes for the model,
 *                          default "2,16"; BENCH_RTT_MS its round trip, default 0.5)
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { basename, dirname, join } from "node:path";
import { bundleCapsule } from "../../dist/cli/bundle.js";
import { postgresBinDir, startLocalPostgres } from "../../scripts/local-postgres.js";
import { interleaved, type LoadResult, runLoad } from "../lib/run-load.js";
import { targetLine } from "../lib/targets.js";
import { type BenchHost, deployAndSeed, hasTaskset, hostHeader, startBenchHost } from "./cluster.js";
import { postmasterPid, treeCpu } from "./cpu.js";
import { type CallCost, modelLines, predict, sharedMachineBound, sharedMachineRate, us } from "./model.js";
import { pgStatements } from "./pg-stats.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DB_CORES = (process.env.BENCH_DB_CORES ?? "2,16").split(",").map(Number);
/** A round trip to a database on another machine of the same network, for the model. */
const RTT_MS = Number(process.env.BENCH_RTT_MS ?? 0.5);
/** Connections per host, in both configurations: each host sees the load it would see alone. */
const CONNECTIONS = 32;
const LISTS = 20;
const PER_LIST = 500;
const TARGET = 1.6;
const CONFIGS = ["one host", "two hosts"] as const;
type Config = (typeof CONFIGS)[number];

/** One run of one configuration: throughput summed over its hosts, and what each call cost. */
interface Measured extends LoadResult, CallCost {
  perHost: number[];
}

async function main(): Promise<void> {
  if (process.platform !== "linux") throw new Error("bench/hosts reads /proc: it runs on Linux only.");
  const cores = cpus().length;
  const loadBefore = loadavg()[0] ?? 0;
  const pinned = hasTaskset();
  if (!pinned) process.stderr.write("taskset (util-linux) is missing: the hosts run unpinned.\n");
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-hosts-"));
  const postgres = await startLocalPostgres([
    "shared_preload_libraries=pg_stat_statements",
    "pg_stat_statements.track_utility=on",
  ]);
  const hosts: BenchHost[] = [];
  let statements: Awaited<ReturnType<typeof pgStatements>> | undefined;
  try {
    const postmaster = postmasterPid(Number(new URL(postgres.url).port));
    for (let i = 0; i < 2; i++)
      hosts.push(await startBenchHost(dir, postgres.url, pinned ? i % cores : undefined));
    const code = (await bundleCapsule("bench/suite/capsule")).code;
    const seeded = await deployAndSeed(code, hosts, LISTS, PER_LIST);
    statements = await pgStatements(postgres.url);
    const pick = (values: string[], n: number) =>
      Array.from({ length: n }, (_, i) => values[(i * 7919) % values.length] as string);
    const workload = [
      {
        op: "get by id",
        path: "/api/query/get",
        bodies: pick(seeded.items, 200).map((id) => JSON.stringify({ id })),
      },
      {
        op: "insert",
        path: "/api/mutation/insert",
        bodies: seeded.lists.map((list, i) => JSON.stringify({ list, text: `new item ${i}` })),
      },
    ];
    const load = (host: BenchHost, path: string, bodies: string[], seconds: number) =>
      runLoad(
        `http://127.0.0.1:${host.port}${path}`,
        bodies,
        dir,
        seconds,
        CONNECTIONS,
        hostHeader(host.port),
      );

    const results: Array<{ op: string; by: Record<Config, Measured> }> = [];
    for (const { op, path, bodies } of workload) {
      // Warm-up: until the JIT settles, a host spends about twice the CPU per call it does after.
      for (const host of hosts) await load(host, path, bodies, Math.max(2, SECONDS));
      const by = await interleaved(CONFIGS, ROUNDS, async (config): Promise<Measured> => {
        const serving = config === "one host" ? hosts.slice(0, 1) : hosts;
        const roots = [...serving.map((h) => h.pid), postmaster];
        const cpuBefore = treeCpu(roots);
        const statementsBefore = await (statements as NonNullable<typeof statements>).read();
        const runs = await Promise.all(serving.map((host) => load(host, path, bodies, SECONDS)));
        const statementsAfter = await (statements as NonNullable<typeof statements>).read();
        const cpuAfter = treeCpu(roots);
        const used = cpuAfter.map((after, i) => after - (cpuBefore[i] as number));
        const calls = runs.reduce((sum, r) => sum + r.total, 0);
        const measured: Measured = {
          rps: runs.reduce((sum, r) => sum + r.rps, 0),
          perHost: runs.map((r) => r.rps),
          p50: Math.max(...runs.map((r) => r.p50)),
          p99: Math.max(...runs.map((r) => r.p99)),
          errors: runs.reduce((sum, r) => sum + r.errors, 0),
          non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
          total: calls,
          hostCpu: used.slice(0, serving.length).reduce((sum, s) => sum + s, 0) / calls,
          pgCpu: (used.at(-1) as number) / calls,
          loadCpu: runs.reduce((sum, r) => sum + r.cpu, 0) / calls,
          cpu: runs.reduce((sum, r) => sum + r.cpu, 0),
          statements: (statementsAfter - statementsBefore) / calls,
        };
        process.stderr.write(`${op} on ${config}: ${Math.round(measured.rps)} calls/s\n`);
        return measured;
      });
      results.push({ op, by });
    }

    const cpu = cpus()[0]?.model ?? "unknown CPU";
    const kernel = execFileSync("uname", ["-sr"], { encoding: "utf8" }).trim();
    const pgVersion = basename(dirname(postgresBinDir() ?? "?/?"));
    const out: string[] = [];
    const ceilings = new Map<string, number>();
    const busy = `load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]?.toFixed(1)} after`;
    out.push(
      `bench/hosts: ${cores} cores (${cpu}), ${(totalmem() / 1024 ** 3).toFixed(0)} GiB, ${kernel}, Node ${process.version}, PostgreSQL ${pgVersion} on loopback; ${pinned ? "host i pinned to core i with taskset" : "hosts unpinned (no taskset)"}, PostgreSQL and autocannon unpinned; median of ${ROUNDS} interleaved runs of ${SECONDS} s, ${CONNECTIONS} connections per host; ${seeded.items.length} items in ${seeded.lists.length} lists; ${busy}`,
    );
    out.push("");
    out.push(
      "| operation | hosts | calls/s (per host) | p50/p99 ms | host CPU per call | PostgreSQL CPU per call | load generator CPU per call | statements per call |",
    );
    out.push("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const { op, by } of results)
      for (const config of CONFIGS) {
        const m = by[config];
        out.push(
          `| ${op} | ${config} | ${Math.round(m.rps).toLocaleString("en-US")} (${m.perHost.map((r) => Math.round(r).toLocaleString("en-US")).join(" + ")}) | ${m.p50}/${m.p99} | ${us(m.hostCpu)} | ${us(m.pgCpu)} | ${us(m.loadCpu)} | ${m.statements.toFixed(2)} |`,
        );
      }
    const failures = results.flatMap(({ op, by }) =>
      CONFIGS.filter((c) => by[c].errors > 0 || by[c].non2xx > 0).map(
        (c) => `${op} on ${c}: ${by[c].errors} errors, ${by[c].non2xx} non-2xx`,
      ),
    );
    if (failures.length > 0) out.push(`failures during load: ${failures.join("; ")}`);
    out.push("");
    for (const { op, by } of results) {
      const ceiling =
        sharedMachineRate(by["two hosts"], 2, cores) / sharedMachineRate(by["one host"], 1, cores);
      ceilings.set(op, ceiling);
      out.push(
        `${op}: two hosts / one host = ${(by["two hosts"].rps / by["one host"].rps).toFixed(2)}x${op === "get by id" ? ` (target >= ${TARGET}x)` : ""}; the bounds these ${cores} cores set, with the CPU per call measured and nothing else running, allow ${ceiling.toFixed(2)}x (one host: min(1 / host CPU, ${cores} / all CPU per call); two hosts: min(2 / host CPU, ${cores} / all CPU per call))`,
      );
    }
    out.push("");
    out.push(
      "Model (one core per host, PostgreSQL on K cores of its own, CPU per call as measured with one host, the run least disturbed by the others; calls/s = min(N / host CPU per call, K / PostgreSQL CPU per call)):",
    );
    const targets: string[] = [];
    for (const { op, by } of results) {
      const one = by["one host"];
      const two = by["two hosts"];
      out.push("");
      out.push(...modelLines(op, one, DB_CORES, RTT_MS));
      const predicted = predict(one, 2, DB_CORES[0] as number).rate;
      const machine = sharedMachineBound(two, cores);
      out.push(
        `${op}, 2 hosts: model with ${DB_CORES[0]} database cores of its own ${Math.round(predicted).toLocaleString("en-US")} calls/s; measured ${Math.round(two.rps).toLocaleString("en-US")} (${Math.round((two.rps / predicted) * 100)}%). Here hosts, PostgreSQL and load generator share ${cores} cores: at most ${cores} / (host + PostgreSQL + load generator CPU per call) = ${Math.round(machine).toLocaleString("en-US")} calls/s (measured ${Math.round((two.rps / machine) * 100)}% of it)`,
      );
      const ratio = two.rps / by["one host"].rps;
      const largest = DB_CORES.at(-1) as number;
      // The full figures are in the tables above; the summary keeps the ratio, the bound and the model.
      targets.push(
        targetLine(
          `${op}: two hosts / one host`,
          `${ratio.toFixed(2)}x`,
          op === "get by id" ? `>= ${TARGET}x` : "none",
          op === "get by id" ? ratio >= TARGET : undefined,
        ),
        targetLine(
          `${op}: the most two hosts / one host can show on ${cores} cores shared with PostgreSQL and load`,
          `${(ceilings.get(op) as number).toFixed(2)}x`,
          "none",
        ),
        targetLine(
          `${op}: model, 4 / 16 / 64 hosts, ${largest}-core database`,
          `${[4, 16, 64].map((n) => Math.round(predict(one, n, largest).rate).toLocaleString("en-US")).join(" / ")} calls/s`,
          "none",
        ),
      );
    }
    out.push("");
    out.push(...targets);
    console.log(out.join("\n"));
  } finally {
    await statements?.close();
    for (const host of hosts) await host.stop();
    await postgres.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
