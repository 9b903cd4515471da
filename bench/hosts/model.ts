/**
 * bench/hosts' capacity model: every call costs CPU on the host that serves it and on PostgreSQL,
 * and a few network round trips. With one core per host and a database with K cores of its own,
 * N hosts serve at most min(N / hostCpuPerCall, K / pgCpuPerCall) calls per second; round trips
 * add latency (and so connections in flight), not CPU, as long as each host has enough
 * connections. The model is linear on purpose: it leaves out lock contention on one deployment's
 * writes, PostgreSQL's own scaling limits over many connections, and the network's bandwidth.
 */

/** CPU per call, in seconds, and statements per call, as measured. */
export interface CallCost {
  hostCpu: number;
  pgCpu: number;
  loadCpu: number;
  statements: number;
}

/** Calls per second N hosts serve with a K-core database, and which side bounds it. */
export function predict(cost: CallCost, hosts: number, dbCores: number): { rate: number; bound: string } {
  const hostBound = hosts / cost.hostCpu;
  const dbBound = dbCores / cost.pgCpu;
  return hostBound <= dbBound ? { rate: hostBound, bound: "hosts" } : { rate: dbBound, bound: "database" };
}

/**
 * What the machine measured on can do at most when every process shares its `cores`: each call
 * costs host, PostgreSQL and load-generator CPU, all on the same cores.
 */
export function sharedMachineBound(cost: CallCost, cores: number): number {
  return cores / (cost.hostCpu + cost.pgCpu + cost.loadCpu);
}

/**
 * The most that `hosts` pinned hosts can serve on a machine of `cores` cores that also runs
 * PostgreSQL and the load generator: each host is bound by its own core, all together by the cores.
 */
export function sharedMachineRate(cost: CallCost, hosts: number, cores: number): number {
  return Math.min(hosts / cost.hostCpu, sharedMachineBound(cost, cores));
}

/** PostgreSQL connections each host opens at most (see docs/operators.md, "Several hosts"). */
export const CONNECTIONS_PER_HOST = 49;

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
/** CPU seconds as whole microseconds ("164 µs"). */
export const us = (seconds: number) => `${Math.round(seconds * 1e6)} µs`;

/**
 * The model's lines for one operation, for 1, 2, 4, 16 and 64 hosts and each database size, and
 * the calls a host keeps in flight when each round trip to the database takes `rttMs`.
 */
export function modelLines(op: string, cost: CallCost, dbCores: readonly number[], rttMs: number): string[] {
  const out: string[] = [];
  out.push(
    `${op}: host ${us(cost.hostCpu)} CPU per call -> ${fmt(1 / cost.hostCpu)} calls/s per host core; PostgreSQL ${us(cost.pgCpu)} CPU per call -> ${fmt(1 / cost.pgCpu)} calls/s per database core; ${cost.statements.toFixed(2)} statements per call`,
  );
  out.push("");
  out.push(
    `| hosts | ${dbCores.map((k) => `database with ${k} cores`).join(" | ")} | PostgreSQL connections |`,
  );
  out.push(`| --- | ${dbCores.map(() => "---").join(" | ")} | --- |`);
  for (const n of [1, 2, 4, 16, 64]) {
    const cells = dbCores.map((k) => {
      const { rate, bound } = predict(cost, n, k);
      return `${fmt(rate)} (${bound})`;
    });
    out.push(`| ${n} | ${cells.join(" | ")} | up to ${fmt(n * CONNECTIONS_PER_HOST)} |`);
  }
  const inFlight = (1 / cost.hostCpu) * (cost.hostCpu + cost.pgCpu + cost.statements * rttMs * 1e-3);
  out.push(
    `Round trips add waiting, not CPU: at ${rttMs} ms per round trip and at most ${cost.statements.toFixed(2)} round trips per call (statements; several travel in one message), a host at its rate keeps about ${inFlight.toFixed(0)} calls in flight (Little's law: rate x (host + PostgreSQL CPU + round trips x RTT)), so its clients need that many connections open and it about as many PostgreSQL connections of its 49`,
  );
  return out;
}
