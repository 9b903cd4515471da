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
}

/** Runs bench/lib/load.ts in a child process against `url`, cycling through `bodies`. */
export async function runLoad(
  url: string,
  bodies: string[],
  dir: string,
  seconds = 5,
  connections = 32,
): Promise<LoadResult> {
  const file = join(dir, `bodies-${Date.now()}.json`);
  await writeFile(file, JSON.stringify(bodies));
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "bench/lib/load.ts", url, file, String(seconds), String(connections)],
      (error, out) => (error ? reject(error) : resolve(out)),
    );
  });
  return JSON.parse(stdout.trim().split("\n").at(-1) as string) as LoadResult;
}
