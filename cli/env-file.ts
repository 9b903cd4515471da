import { spawnSync } from "node:child_process";
import { closeSync, constants, existsSync, fstatSync, openSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { parse } from "dotenv";
import { PlatformError } from "../sdk/values/index.js";

/** The server-only env file of a capsule folder. */
export const SERVER_ENV_FILE = ".env.platform.server";

/**
 * True when `<dir>/.env.platform.server` is tracked by git (its secrets would be in the history).
 * False when it is not, or when git is not available or the folder is not a repository.
 */
export function envFileTrackedByGit(dir: string): boolean {
  if (!existsSync(join(dir, SERVER_ENV_FILE))) return false;
  // A project's own git config runs no command here: `core.fsmonitor` names one git runs, and a
  // folder of a cloned repository can pose as a bare repository whose config git reads.
  const safely = ["-c", "core.fsmonitor=false", "-c", "safe.bareRepository=explicit"];
  const result = spawnSync("git", [...safely, "ls-files", "--error-unmatch", SERVER_ENV_FILE], {
    cwd: dir,
    stdio: "ignore",
  });
  return result.status === 0;
}

/**
 * Opens `file` for reading unless it is a symbolic link (`O_NOFOLLOW`); non-blocking, so that a
 * FIFO in its place answers at once rather than wait for a writer. Undefined when it is absent.
 */
function openUnlessLink(file: string): number | undefined {
  try {
    return openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code !== "ELOOP") throw error;
    throw new PlatformError(
      "bad_request",
      `${SERVER_ENV_FILE} is a symbolic link (to ${readlinkSync(file)}); it is read only as a file of its own, so that a link cannot send another file (~/.aws/credentials) as the deployment's env. Put the values in the file itself.`,
    );
  }
}

/**
 * Reads `<dir>/.env.platform.server` (dotenv syntax); empty when the file is absent. Only a regular
 * file of that name is read: with a link in its place (`-> ~/.aws/credentials`) a cloned template
 * had `platform deploy` send what it led to as the deployment's env (an attack review), and a
 * FIFO or device would hang or flood the read.
 */
export function readServerEnv(dir: string): Record<string, string> {
  return readServerEnvFile(dir) ?? {};
}

/**
 * The values of `<dir>/.env.platform.server`, or undefined when there is no such file (a deploy
 * then keeps the deployment's values: a fresh clone or a CI job has none, and wiped them).
 */
export function readServerEnvFile(dir: string): Record<string, string> | undefined {
  const fd = openUnlessLink(join(dir, SERVER_ENV_FILE));
  if (fd === undefined) return undefined;
  try {
    if (!fstatSync(fd).isFile())
      throw new PlatformError(
        "bad_request",
        `${SERVER_ENV_FILE} is not a regular file; make it one, with the values in dotenv syntax.`,
      );
    return parse(readFileSync(fd));
  } finally {
    closeSync(fd);
  }
}
