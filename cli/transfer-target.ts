import { type Command, Option } from "commander";
import { printable } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";
import { ownerToken } from "./config.js";
import { parseHostUrl, parsePort, requireIdWithHost } from "./flags.js";

/** The flags `platform export` and `platform import` share to find their deployment. */
export interface TransferFlags {
  port: number;
  host?: string;
  token?: string;
  objects: boolean;
  json?: boolean;
}

/** Adds the shared flags: the dev server's `--port`, or `--host` and `--token` for a hosted deployment. */
export function transferOptions(command: Command): Command {
  return command
    .addOption(new Option("--port <port>", "port of the local dev server").default(3000).argParser(parsePort))
    .addOption(
      new Option("--host <url>", "control plane URL of the host, for a hosted deployment").argParser(
        parseHostUrl,
      ),
    )
    .option(
      "--token <token>",
      "owner or operator token (default: PLATFORM_TOKEN, the login, PLATFORM_ADMIN_TOKEN)",
    )
    .option("--no-objects", "leave stored objects (files) out")
    .option("--json", "print the result as JSON");
}

/**
 * Where an export or import goes: the dev server's local deployment without a deploy id, else
 * `<host>/v1/deploys/<id>/<action>` with the owner's (or operator's) credentials.
 */
export function transferUrl(
  deployId: string | undefined,
  action: "export" | "import",
  flags: TransferFlags,
): { url: URL; headers: Record<string, string>; label: string } {
  let url: URL;
  const headers: Record<string, string> = {};
  requireIdWithHost(deployId, flags.host, `platform ${action} <deploy_id> --host <url>`);
  if (deployId) {
    if (!flags.host)
      throw new PlatformError("bad_request", "A hosted deployment needs --host <control plane URL>.");
    url = new URL(`/v1/deploys/${encodeURIComponent(deployId)}/${action}`, flags.host);
    const token = ownerToken(flags.host, flags.token);
    if (!token)
      throw new PlatformError(
        "unauthorized",
        "No credentials: pass --token, run platform login --host <url>, or set PLATFORM_TOKEN.",
      );
    headers.authorization = `Bearer ${token}`;
  } else {
    url = new URL(`http://localhost:${flags.port}/__platform/${action}`);
  }
  if (!flags.objects) url.searchParams.set("objects", "0");
  return { url, headers, label: deployId ?? `the dev server on port ${flags.port}` };
}

/**
 * A progress line on stderr: in place on a terminal, one line per call otherwise. Shown as text:
 * its figures come from the host's answer.
 */
export function progressLine(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r${printable(text)}\u001b[K`);
  else process.stderr.write(`${printable(text)}\n`);
}

/** Ends in-place progress output (a newline on a terminal). */
export function endProgress(): void {
  if (process.stderr.isTTY) process.stderr.write("\n");
}
