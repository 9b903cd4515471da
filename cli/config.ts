import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  existsSync,
  fchmodSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { PlatformError } from "../sdk/values/index.js";
import { printWarning } from "./output.js";

/** The CLI's small config file: stored logins per host, and the local guest name. */
export interface CliConfig {
  logins: Record<string, { token: string; developer?: string }>;
  guestName?: string;
}

/** `$PLATFORM_CONFIG_DIR`, else `$XDG_CONFIG_HOME/platform`, else `~/.config/platform`. */
export function configDir(): string {
  return (
    process.env.PLATFORM_CONFIG_DIR ??
    join(process.env.XDG_CONFIG_HOME ?? join(homedir(), ".config"), "platform")
  );
}

function configFile(): string {
  return join(configDir(), "config.json");
}

/**
 * Reads the config (empty when missing). A file that is not a JSON object (edited by hand, or cut
 * short by a crash of an older CLI) is refused with its path and what to do, not JSON.parse's bare
 * "Unexpected end of JSON input".
 */
export function readConfig(): CliConfig {
  const file = configFile();
  if (!existsSync(file)) return { logins: {} };
  let parsed: Partial<CliConfig> | null;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<CliConfig> | null;
  } catch (error) {
    throw unreadable(file, error);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw unreadable(file);
  return { logins: parsed.logins ?? {}, ...(parsed.guestName ? { guestName: parsed.guestName } : {}) };
}

/** What {@link readConfig} throws for a file it cannot use: which file, and how to get going again. */
function unreadable(file: string, cause?: unknown): PlatformError {
  return new PlatformError(
    "bad_request",
    `The CLI's config file ${file} is not a JSON object (damaged or cut short). Fix it, or delete it and run platform login again.`,
    { cause },
  );
}

/**
 * Writes the config, readable by the user only (it holds tokens): into a new file of the same
 * folder, created 0600 (so an older file's wider mode is not kept) and synced, then renamed over
 * `config.json`, so a crash leaves the old file or the new one, never half of one, and a symbolic
 * link at that name is replaced rather than written through. The folder is made 0700 too.
 */
export function writeConfig(config: CliConfig): void {
  const dir = configDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Best effort: a PLATFORM_CONFIG_DIR of another owner keeps its mode (the file is 0600 anyway).
  try {
    chmodSync(dir, 0o700);
  } catch {}
  const temporary = join(dir, `.config.json.${randomBytes(6).toString("hex")}.tmp`);
  // "wx": created here or not at all, never an existing file or a link planted at the name.
  const fd = openSync(temporary, "wx", 0o600);
  try {
    try {
      fchmodSync(fd, 0o600); // whatever the umask
      writeFileSync(fd, `${JSON.stringify(config, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, configFile());
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/** The normalised key of a host URL (`http://localhost:8080`). */
export function hostKey(url: string): string {
  return new URL(url).origin;
}

/**
 * The token for owner commands against `host`: `--token`, else `PLATFORM_TOKEN`, else the stored
 * login for that host, else `PLATFORM_ADMIN_TOKEN` (the operator's). An explicit token wins over a
 * stored one, as CI sets it (the Convex, Vercel and Supabase CLIs do the same); but an environment
 * token is tied to no host, so when `PLATFORM_TOKEN` displaces a different login stored for this
 * very host the user is told: the login of the host named lost to a token meant for another (an
 * attack review, 2026-12-06). Where any token may be sent: cli/token-transport.ts.
 */
export function ownerToken(host: string, flag?: string): string | undefined {
  if (flag !== undefined) return flag;
  const fromEnv = process.env.PLATFORM_TOKEN;
  if (fromEnv === undefined)
    return readConfig().logins[hostKey(host)]?.token ?? process.env.PLATFORM_ADMIN_TOKEN;
  let login: string | undefined;
  try {
    login = readConfig().logins[hostKey(host)]?.token;
  } catch {
    // A damaged config file does not stop a command that needs none of it.
  }
  if (login !== undefined && login !== fromEnv)
    printWarning(
      `PLATFORM_TOKEN is set: it is sent to ${hostKey(host)} instead of your platform login for it. Unset PLATFORM_TOKEN to use the login.`,
    );
  return fromEnv;
}
