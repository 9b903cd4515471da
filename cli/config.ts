import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

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

/** Reads the config (empty when missing). */
export function readConfig(): CliConfig {
  const file = configFile();
  if (!existsSync(file)) return { logins: {} };
  const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<CliConfig>;
  return { logins: parsed.logins ?? {}, ...(parsed.guestName ? { guestName: parsed.guestName } : {}) };
}

/** Writes the config, readable by the user only (it holds tokens). */
export function writeConfig(config: CliConfig): void {
  mkdirSync(configDir(), { recursive: true, mode: 0o700 });
  writeFileSync(configFile(), `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}

/** The normalised key of a host URL (`http://localhost:8080`). */
export function hostKey(url: string): string {
  return new URL(url).origin;
}

/**
 * The token for owner commands against `host`: `--token`, else `PLATFORM_TOKEN`, else the stored
 * login for that host, else `PLATFORM_ADMIN_TOKEN` (the operator's).
 */
export function ownerToken(host: string, flag?: string): string | undefined {
  return (
    flag ??
    process.env.PLATFORM_TOKEN ??
    readConfig().logins[hostKey(host)]?.token ??
    process.env.PLATFORM_ADMIN_TOKEN
  );
}
