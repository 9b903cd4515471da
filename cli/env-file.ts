import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "dotenv";

/** The server-only env file of a capsule folder. */
export const SERVER_ENV_FILE = ".env.platform.server";

/**
 * True when `<dir>/.env.platform.server` is tracked by git (its secrets would be in the history).
 * False when it is not, or when git is not available or the folder is not a repository.
 */
export function envFileTrackedByGit(dir: string): boolean {
  if (!existsSync(join(dir, SERVER_ENV_FILE))) return false;
  const result = spawnSync("git", ["ls-files", "--error-unmatch", SERVER_ENV_FILE], {
    cwd: dir,
    stdio: "ignore",
  });
  return result.status === 0;
}

/** Reads `<dir>/.env.platform.server` (dotenv syntax); empty when the file is absent. */
export function readServerEnv(dir: string): Record<string, string> {
  const file = join(dir, SERVER_ENV_FILE);
  return existsSync(file) ? parse(readFileSync(file)) : {};
}
