import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "dotenv";

/** The server-only env file of a capsule folder. */
export const SERVER_ENV_FILE = ".env.platform.server";

/** Reads `<dir>/.env.platform.server` (dotenv syntax); empty when the file is absent. */
export function readServerEnv(dir: string): Record<string, string> {
  const file = join(dir, SERVER_ENV_FILE);
  return existsSync(file) ? parse(readFileSync(file)) : {};
}
