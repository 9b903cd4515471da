/**
 * bench/isolates, cold start: where an evicted deployment's cold start goes (per phase), the first
 * request to each deployment after a host restart with and without the host's code-cache files,
 * host start-up with few against many deployments (it should not grow: nothing per deployment
 * loads at start), and what V8 alone needs for the same bundle (the floor under a cold start).
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ivm from "isolated-vm";
import { startHost } from "../../dist/host/host.js";
import { traceColdStarts } from "../../dist/host/isolates/cold-start-trace.js";
import { percentile } from "../lib/percentile.js";

type Host = Awaited<ReturnType<typeof startHost>>;

const ping = { kind: "query" as const, name: "ping", argsJson: "{}", identity: null };

function open(data: string, codeCacheDir?: string | null): Promise<Host> {
  return startHost({
    requestQuota: false,
    data,
    port: 0,
    domain: "localhost",
    adminToken: randomBytes(8).toString("hex"),
    logDestination: false,
    ...(codeCacheDir === undefined ? {} : { pool: { codeCacheDir } }),
  });
}

function elapsedMs(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Times of calls, with each cold-start phase's times (see host/isolates/cold-start-trace.ts). */
class Timings {
  readonly totals: number[] = [];
  private readonly phases = new Map<string, number[]>();

  /** Calls `id` once, timing the call and the phases of the cold start it makes. */
  async call(host: Host, id: string): Promise<void> {
    const laps: Array<[string, number]> = [];
    traceColdStarts((phase, ms) => laps.push([phase, ms]));
    const started = process.hrtime.bigint();
    await host.deployments.call(id, ping);
    const total = elapsedMs(started);
    traceColdStarts(null);
    this.totals.push(total);
    const traced = laps.reduce((sum, [, ms]) => sum + ms, 0);
    for (const [phase, ms] of [...laps, ["first call and the rest", total - traced] as [string, number]])
      this.phases.set(phase, [...(this.phases.get(phase) ?? []), ms]);
  }

  /** Each phase's median (ms) and in how many of the calls it occurred. */
  breakdown(): string {
    const count = this.totals.length;
    return [...this.phases]
      .map(
        ([phase, ms]) =>
          `${phase} ${percentile(ms, 50).toFixed(2)}${ms.length < count ? ` (${ms.length}/${count})` : ""}`,
      )
      .join(", ");
  }

  summary(): string {
    return `p50 ${percentile(this.totals, 50).toFixed(1)} ms, p90 ${percentile(this.totals, 90).toFixed(1)} ms`;
  }
}

/** Cold starts of `id` (evicted each time). */
export async function coldStarts(host: Host, id: string, rounds: number): Promise<Timings> {
  const runner = host.deployments.pool.runner(id, (await host.deployments.require(id)).artifact);
  const timings = new Timings();
  for (let i = 0; i < rounds; i++) {
    // Cold starts 50 ms after the eviction, not back to back: the host frees the evicted isolate
    // and makes its spare one in between, as it does when requests to evicted deployments are apart.
    runner.evict();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await timings.call(host, id);
  }
  return timings;
}

/**
 * Deploys `count` distinct ~500 KB bundles (`bundle(i)`), then restarts the host on the same data
 * `rounds` times each with its code-cache files and without any (interleaved), and times the
 * first request to each deployment, back to back.
 */
export async function afterRestart(bundle: (i: number) => string, count: number, rounds: number) {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-restart-"));
  const data = join(dir, "host");
  const deploying = await open(data);
  for (let i = 0; i < count; i++) await deploying.deployments.deploy(`r${i}`, { code: bundle(i) });
  await deploying.deployments.pool.factory.codeCache.settled();
  await deploying.close();
  const cached = new Timings();
  const uncached = new Timings();
  for (let round = 0; round < rounds; round++)
    for (const [timings, codeCacheDir] of [
      [cached, undefined],
      [uncached, null],
    ] as const) {
      const host = await open(data, codeCacheDir);
      for (let i = 0; i < count; i++) await timings.call(host, `r${i}`);
      await host.close();
    }
  await rm(dir, { recursive: true, force: true });
  return { cached, uncached };
}

/** Host start-up (ms, median of `rounds`, interleaved) with `few` against `many` deployments of `code`. */
export async function startupTimes(code: string, few: number, many: number, rounds: number) {
  const dir = await mkdtemp(join(tmpdir(), "platform-bench-startup-"));
  const sizes = [few, many];
  for (const size of sizes) {
    const host = await open(join(dir, String(size)));
    for (let i = 0; i < size; i++) await host.deployments.deploy(`s${i}`, { code });
    await host.close();
  }
  const times = new Map<number, number[]>(sizes.map((size) => [size, []]));
  for (let round = 0; round < rounds; round++)
    for (const size of sizes) {
      const started = process.hrtime.bigint();
      const host = await open(join(dir, String(size)));
      times.get(size)?.push(elapsedMs(started));
      await host.close();
    }
  await rm(dir, { recursive: true, force: true });
  return sizes.map((size) => ({ size, ms: percentile(times.get(size) ?? [], 50) }));
}

/**
 * What V8 alone needs to bring `code` back in a fresh isolate, synchronously and with nothing of
 * the platform around it (p50 of `rounds`, ms): deserializing a code cache made as the host makes
 * a deployment's own (compiled, run, compiled again), then running the bundle's top level. A cold
 * start cannot take less; the rest of it is the host's (thread hops, the first call, bookkeeping).
 */
export function v8Floor(code: string, rounds: number): { deserializeMs: number; runMs: number } {
  const maker = new ivm.Isolate({ memoryLimit: 128 });
  maker.compileScriptSync(code).runSync(maker.createContextSync());
  const made = maker.compileScriptSync(code, { produceCachedData: true }) as ivm.Script &
    ivm.CachedDataResult;
  const cachedData = made.cachedData as ivm.ExternalCopy<ArrayBuffer>;
  maker.dispose();
  const deserialize: number[] = [];
  const run: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    const context = isolate.createContextSync();
    let started = process.hrtime.bigint();
    const script = isolate.compileScriptSync(code, { cachedData }) as ivm.Script & {
      cachedDataRejected?: boolean;
    };
    deserialize.push(elapsedMs(started));
    if (script.cachedDataRejected) throw new Error("V8 refused its own code cache");
    started = process.hrtime.bigint();
    script.runSync(context);
    run.push(elapsedMs(started));
    isolate.dispose();
  }
  cachedData.release();
  return { deserializeMs: percentile(deserialize, 50), runMs: percentile(run, 50) };
}
