import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

/** What one load run measured. */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Requests answered in the run. */
  total: number;
  /** The load generator's own CPU seconds during the run. */
  cpu: number;
}

/**
 * Runs bench/lib/load.ts in a child process against `url`, cycling through `bodies`; `host`, when
 * given, is sent as the `Host` header. With `spread`, each connection starts at a body of its own.
 */
export async function runLoad(
  url: string,
  bodies: string[],
  dir: string,
  seconds = 5,
  connections = 32,
  host?: string,
  spread = false,
): Promise<LoadResult> {
  const file = join(dir, `bodies-${process.hrtime.bigint()}.json`);
  await writeFile(file, JSON.stringify(bodies));
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      [
        "--import",
        "tsx",
        "bench/lib/load.ts",
        url,
        file,
        String(seconds),
        String(connections),
        ...(host ? [host] : []),
      ],
      { env: spread ? { ...process.env, LOAD_SPREAD: "1" } : process.env },
      (error, out) => (error ? reject(error) : resolve(out)),
    );
  });
  return JSON.parse(stdout.trim().split("\n").at(-1) as string) as LoadResult;
}

/**
 * Measures several targets in `rounds` interleaved rounds (a, b, c, a, b, c, ...) and keeps, per
 * target, the run with the median throughput. The machines here are shared: a swing of the host
 * lands on one run of every target alike instead of on all runs of one target. `measure` runs one
 * load against one target.
 */
export async function interleaved<Name extends string, Result extends LoadResult>(
  names: readonly Name[],
  rounds: number,
  measure: (name: Name) => Promise<Result>,
): Promise<Record<Name, Result>> {
  const runs = new Map<Name, Result[]>(names.map((name) => [name, []]));
  for (let round = 0; round < rounds; round++)
    for (const name of names) (runs.get(name) as Result[]).push(await measure(name));
  const median = {} as Record<Name, Result>;
  for (const [name, results] of runs) {
    const sorted = [...results].sort((x, y) => x.rps - y.rps);
    median[name] = sorted[Math.floor((sorted.length - 1) / 2)] as Result;
  }
  return median;
}
