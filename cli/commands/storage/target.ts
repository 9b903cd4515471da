import { type Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { checkDeploymentId } from "../../../host/deployments/records.js";
import { printable } from "../../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../../sdk/values/index.js";
import { readConfig } from "../../config.js";
import { parseHostUrl, parsePort, withScheme } from "../../flags.js";
import { type HttpResponse, sendRequest } from "../../http.js";
import { remoteError } from "../../remote-error.js";

/** Where a storage command goes: the local dev server, or a hosted deployment. */
export interface Target {
  base: string;
  hosted: boolean;
  deployId: string;
  controlPlane?: string;
}

/** The flags every storage command takes to find its target (see {@link targetOptions}). */
export interface TargetFlags {
  port: number;
  host?: string;
  json?: boolean;
  verbose?: boolean;
}

/** Adds the options every storage command shares: the target, `--json` and `--verbose`. */
export function targetOptions(command: Command): Command {
  return command
    .addOption(new Option("--port <port>", "port of the local dev server").default(3000).argParser(parsePort))
    .addOption(
      new Option("--host <url>", "control plane URL, to reach a hosted deployment by id").argParser(
        parseHostUrl,
      ),
    )
    .option("--json", "print JSON")
    .option("--verbose", "print stack traces of errors");
}

/** Adds `--deploy` (a hosted app instead of the dev server) and `--token`, described by `tokenHelp`. */
export function hostedAppOptions(command: Command, tokenHelp: string): Command {
  return command
    .option("--deploy <id|url>", "a hosted app instead of the dev server")
    .option("--token <token>", tokenHelp);
}

/**
 * Resolves a target: no deploy id means the dev server on `--port`; a URL
 * (`http://<id>.<domain>:<port>`, or without `http://`: a deployment id has no `.` or `:`) or an
 * id with `--host <control plane URL>` means a hosted app. The id must be a deployment id (a usage
 * error otherwise): it becomes a host name, and `attacker/x` made `http://attacker/x.<domain>`,
 * which sent the token to the host `attacker`.
 */
export function resolveTarget(deploy: string | undefined, flags: TargetFlags): Target {
  if (!deploy) return { base: `http://localhost:${flags.port}`, hosted: false, deployId: "dev" };
  if (/^https?:\/\/|[.:]/.test(deploy)) {
    const url = URL.canParse(withScheme(deploy)) ? new URL(withScheme(deploy)) : undefined;
    const [id, ...rest] = url?.hostname.split(".") ?? [];
    if (!url || !/^https?:$/.test(url.protocol) || !isDeploymentId(id) || rest.length === 0)
      throw new InvalidArgumentError(
        `${printable(deploy)} is not a deployment: write its URL (http://<id>.<domain>:<port>) or its id with --host.`,
      );
    return {
      base: url.origin,
      hosted: true,
      deployId: id as string,
      controlPlane: `${url.protocol}//${rest.join(".")}${url.port ? `:${url.port}` : ""}`,
    };
  }
  if (!isDeploymentId(deploy))
    throw new InvalidArgumentError(
      `${printable(deploy)} is not a deployment id (1-63 lowercase letters, digits or '-', starting with a letter) nor a deployment's URL.`,
    );
  const deployId = deploy;
  const host = flags.host ?? Object.keys(readConfig().logins)[0];
  if (!host)
    throw new PlatformError(
      "bad_request",
      `To reach deployment ${deployId}, pass --host <control plane URL> or its URL (http://${deployId}.<domain>:<port>).`,
    );
  const control = new URL(host);
  return {
    base: `${control.protocol}//${deployId}.${control.host}`,
    hosted: true,
    deployId,
    controlPlane: control.origin,
  };
}

function isDeploymentId(id: string | undefined): boolean {
  try {
    checkDeploymentId(id);
    return true;
  } catch {
    return false;
  }
}

/** The local guest's token (`guest:<name>` from `platform auth as`, default `guest:cli`). */
export async function localGuestToken(target: Target): Promise<string> {
  const name = readConfig().guestName ?? "cli";
  const response = await send(
    `${target.base}/__platform/auth/guest`,
    { method: "POST", body: JSON.stringify({ name }) },
    target,
  );
  if (response.status !== 200) throw remoteError(response);
  return response.json<{ token: string }>().token;
}

/** One request to the target; no answer at all says how to start a dev server (or what failed). */
export async function send(
  url: string,
  options: Parameters<typeof sendRequest>[1],
  target: Target,
): Promise<HttpResponse> {
  try {
    return await sendRequest(url, options);
  } catch (error) {
    // Refused before sending (a token over plain HTTP), or an answer past what is read: as they are.
    if (error instanceof CommanderError || isPlatformError(error)) throw error;
    throw new PlatformError(
      "unavailable",
      target.hosted
        ? `Cannot reach ${target.base} (${(error as Error).message}).`
        : `No dev server answers on ${target.base}: start one with platform dev.`,
    );
  }
}

/**
 * The server's error for a failed storage command, with what to do when a hosted app refused the
 * credentials (which credentials each command needs differs).
 */
export function storageFailure(
  response: HttpResponse,
  target: Target,
  action: "list" | "put" | "get" | "delete",
): PlatformError {
  const error = remoteError(response);
  if (!target.hosted || (error.code !== "unauthorized" && error.code !== "forbidden")) return error;
  const hint =
    action === "put"
      ? " Hosted uploads need a signed-in account with a verified email: upload from the app instead (or pass an account token with --token)."
      : " Pass credentials: --token, PLATFORM_TOKEN or platform login (owner), or --inspect-token / PLATFORM_INSPECT_TOKEN for list.";
  return new PlatformError(error.code, `${error.message}${hint}`);
}
