/**
 * What `platform host` keeps in and checks about its data folder before it starts: the operator
 * token (from the environment, or made once and kept there) and who may open the folder.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PlatformError } from "../sdk/values/index.js";
import { printWarning } from "./output.js";

/** Operator tokens shorter than this get a warning at start (a generated one has 32; 16 random ones are past guessing). */
const MIN_ADMIN_TOKEN_CHARS = 16;

/** The operator token: `PLATFORM_ADMIN_TOKEN`, else one generated once and kept in the data folder. */
export function adminToken(data: string): { token: string; generated: boolean } {
  const fromEnv = process.env.PLATFORM_ADMIN_TOKEN;
  if (fromEnv) return { token: fromEnv, generated: false };
  const file = join(data, "admin-token");
  if (existsSync(file)) {
    const token = readFileSync(file, "utf8").trim();
    if (token === "")
      throw new PlatformError(
        "invalid_request",
        `${file} is empty: write the operator token into it, or delete it to have a new one made.`,
      );
    return { token, generated: false };
  }
  mkdirSync(data, { recursive: true, mode: 0o700 });
  const token = randomBytes(24).toString("base64url");
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return { token, generated: true };
}

/**
 * Warns about a `PLATFORM_ADMIN_TOKEN` short enough to guess: it opens every tenant (sign-ins are
 * limited, guesses still possible).
 */
export function warnIfShortToken(): void {
  const fromEnv = process.env.PLATFORM_ADMIN_TOKEN;
  if (fromEnv && fromEnv.length < MIN_ADMIN_TOKEN_CHARS)
    printWarning(
      `PLATFORM_ADMIN_TOKEN is ${fromEnv.length} characters: use a long random one (openssl rand -hex 32), or leave it unset to have one made and kept in the data folder.`,
    );
}

/**
 * Warns when other users of the machine may open the data folder (one made before the host
 * created it 0700): it holds every tenant's rows and files, and the dashboard's sessions.
 */
export function warnIfShared(data: string): void {
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(data, { throwIfNoEntry: false });
  } catch {
    return; // Not a folder (a file on its path): starting the host says so.
  }
  if (!stats) return;
  const mode = stats.mode & 0o777;
  if ((mode & 0o077) !== 0)
    printWarning(
      `the data folder ${data} can be opened by other users of this machine (mode ${mode.toString(8)}); it holds every tenant's data: run chmod 700 ${data}`,
    );
}
