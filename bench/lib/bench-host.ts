/**
 * The platform side of the benchmarks that compare it with other servers on bench/suite's todo
 * workload: one embedded host serving the bench capsule, seeded with 10,000 items in 20 lists, and
 * the seeded rows read back so that every peer starts from the same ids.
 */
import { UNLIMITED_BUDGET } from "../../dist/host/db/index.js";
import { startHost } from "../../dist/host/host.js";
import type { SeedRow } from "../suite/peers.js";

/** Lists and items per list every bench host is seeded with. */
export const LISTS = 20;
export const PER_LIST = 500;

export type BenchHost = Awaited<ReturnType<typeof startHost>>;

/** A platform host serving the bench capsule at every host name, seeded with the workload's data. */
export async function benchHost(dir: string, code: string, database?: string): Promise<BenchHost> {
  const host = await startHost({
    requestQuota: false,
    data: dir,
    ...(database ? { database } : {}),
    port: 0,
    domain: "localhost",
    adminToken: "bench",
    devDeployment: "bench",
    logDestination: false,
    logCalls: false,
    pool: { maxLive: 100_000 },
  });
  await host.deployments.deploy("bench", { code });
  for (let l = 0; l < LISTS; l++)
    await host.deployments.call("bench", {
      kind: "mutation",
      name: "seed",
      argsJson: JSON.stringify({ lists: 1, perList: PER_LIST }),
      identity: null,
    });
  return host;
}

/** Every item a bench host seeded, read straight from its database. */
export async function seededRows(host: BenchHost): Promise<SeedRow[]> {
  const database = await host.deployments.db.deployment("bench");
  const all = await database.query(
    (tx) => tx.query({ table: "items", index: "by_creation", range: [], order: "asc" }, { kind: "collect" }),
    { budget: UNLIMITED_BUDGET },
  );
  return (all.value.kind === "rows" ? all.value.rows : []).map((json) => JSON.parse(json) as SeedRow);
}

/**
 * Cold starts of the bench deployment: evicted, then a get by id sent at once (ms each), through
 * `call` (by default in process, as bench/suite times it).
 */
export async function evictedColdStarts(
  host: BenchHost,
  firstId: string,
  rounds: number,
  call: (argsJson: string) => Promise<unknown> = (argsJson) =>
    host.deployments.call("bench", { kind: "query", name: "get", argsJson, identity: null }),
): Promise<number[]> {
  const runner = host.deployments.pool.runner("bench", (await host.deployments.require("bench")).artifact);
  const argsJson = JSON.stringify({ id: firstId });
  const colds: number[] = [];
  for (let i = 0; i < rounds; i++) {
    runner.evict();
    const started = process.hrtime.bigint();
    await call(argsJson);
    colds.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return colds;
}
