import { existsSync, statSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { basename } from "node:path";
import { Presets, SingleBar } from "cli-progress";
import type { Command } from "commander";
import { lookup } from "mime-types";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { ownerToken, readConfig } from "../config.js";
import { type HttpResponse, sendRequest } from "../http.js";
import { formatBytes, reportError } from "../output.js";

/** Where a storage command goes: the local dev server, or a hosted deployment. */
interface Target {
  base: string;
  hosted: boolean;
  deployId: string;
  controlPlane?: string;
}

interface TargetFlags {
  port: string;
  host?: string;
}

/**
 * Resolves a target: no deploy id means the dev server on `--port`; a URL
 * (`http://<id>.<domain>:<port>`) or an id with `--host <control plane URL>` means a hosted app.
 */
function resolveTarget(deploy: string | undefined, flags: TargetFlags): Target {
  if (!deploy) return { base: `http://localhost:${flags.port}`, hosted: false, deployId: "dev" };
  if (/^https?:\/\//.test(deploy)) {
    const url = new URL(deploy);
    const [id, ...rest] = url.hostname.split(".");
    return {
      base: url.origin,
      hosted: true,
      deployId: id as string,
      controlPlane: `${url.protocol}//${rest.join(".")}${url.port ? `:${url.port}` : ""}`,
    };
  }
  const host = flags.host ?? Object.keys(readConfig().logins)[0];
  if (!host)
    throw new PlatformError(
      "bad_request",
      `To reach deployment ${deploy}, pass --host <control plane URL> or its URL (http://${deploy}.<domain>:<port>).`,
    );
  const control = new URL(host);
  return {
    base: `${control.protocol}//${deploy}.${control.host}`,
    hosted: true,
    deployId: deploy,
    controlPlane: control.origin,
  };
}

/** The local guest's token (`guest:<name>` from `platform auth as`, default `guest:cli`). */
async function localGuestToken(target: Target): Promise<string> {
  const name = readConfig().guestName ?? "cli";
  const response = await send(
    `${target.base}/__platform/auth/guest`,
    { method: "POST", body: JSON.stringify({ name }) },
    target,
  );
  return response.json<{ token: string }>().token;
}

async function send(
  url: string,
  options: Parameters<typeof sendRequest>[1],
  target: Target,
): Promise<HttpResponse> {
  try {
    return await sendRequest(url, options);
  } catch (error) {
    throw new PlatformError(
      "unavailable",
      target.hosted
        ? `Cannot reach ${target.base} (${(error as Error).message}).`
        : `No dev server answers on ${target.base}: start one with platform dev.`,
    );
  }
}

/** Turns an error response into a message that says what to do. */
function failure(response: HttpResponse, target: Target, action: string): PlatformError {
  let code = "internal";
  let message = `The server answered ${response.status}.`;
  try {
    ({ code, message } = response.json<{ error: { code: string; message: string } }>().error);
  } catch {
    // not JSON: keep the status text
  }
  const hint =
    response.status === 401 || response.status === 403
      ? target.hosted
        ? action === "put"
          ? " Hosted uploads need a signed-in account with a verified email: upload from the app instead (or pass an account token with --token)."
          : " Pass credentials: --token, PLATFORM_TOKEN or platform login (owner), or --inspect-token / PLATFORM_INSPECT_TOKEN for list."
        : ""
      : "";
  return new PlatformError(
    ([
      "unauthorized",
      "forbidden",
      "not_found",
      "too_large",
      "quota_exceeded",
      "blocked_type",
      "invalid_request",
      "unavailable",
    ].includes(code)
      ? code
      : "internal") as "internal",
    `${message}${hint}`,
  );
}

/**
 * A progress bar on stderr, only when stderr is a terminal (piped output stays free of control
 * characters). Returns undefined otherwise.
 */
function progressBar(
  label: string,
): { update: (sent: number, total: number) => void; stop: () => void } | undefined {
  if (!process.stderr.isTTY) return undefined;
  const bar = new SingleBar(
    {
      format: `${label} [{bar}] {percentage}% {value}/{total} bytes`,
      stream: process.stderr,
      hideCursor: true,
    },
    Presets.shades_classic,
  );
  let started = false;
  return {
    update: (sent, total) => {
      if (!started) {
        bar.start(total, 0);
        started = true;
      }
      bar.update(sent);
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

function print(json: boolean, value: unknown, human: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
}

function run(action: () => Promise<void>, verbose?: boolean) {
  return action().catch((error: unknown) => process.exit(reportError(error, verbose)));
}

/** `platform storage list | put | get | delete` (SPEC.md "Command-line tool"). */
export function registerStorage(program: Command): void {
  const storage = program
    .command("storage")
    .description("list, upload, download and delete stored files of the dev server or a hosted app");
  const common = (command: Command) =>
    command
      .option("--port <port>", "port of the local dev server", "3000")
      .option("--host <url>", "control plane URL, to reach a hosted deployment by id")
      .option("--json", "print JSON")
      .option("--verbose", "print stack traces of errors");

  common(
    storage.command("list").argument("[deploy_id]", "a hosted deployment (id or URL); none: the dev server"),
  )
    .description("list the newest 500 files: key, size, type, uploader, then totals")
    .option("--prefix <prefix>", "only keys starting with this (checked within the newest 500)")
    .option(
      "--inspect-token <token>",
      "claim or developer token for a hosted app (default: $PLATFORM_INSPECT_TOKEN, then your login)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  platform storage list\n  platform storage list todo --host http://localhost:8080 --prefix public/ --json",
    )
    .action(
      (
        deploy: string | undefined,
        flags: TargetFlags & { json?: boolean; prefix?: string; inspectToken?: string; verbose?: boolean },
      ) =>
        run(async () => {
          const target = resolveTarget(deploy, flags);
          const token = target.hosted
            ? (flags.inspectToken ??
              process.env.PLATFORM_INSPECT_TOKEN ??
              ownerToken(target.controlPlane ?? target.base))
            : undefined;
          const response = await send(
            `${target.base}/__platform/storage`,
            { headers: token ? { authorization: `Bearer ${token}` } : {} },
            target,
          );
          if (response.status !== 200) throw failure(response, target, "list");
          const listing = response.json<{
            objects: Array<{
              key: string;
              size: number;
              contentType: string;
              uploaderId: string;
              uploaderEmail: string | null;
            }>;
            totals: { count: number; bytes: number };
            newest: number;
            truncated: boolean;
          }>();
          const objects = flags.prefix
            ? listing.objects.filter((o) => o.key.startsWith(flags.prefix as string))
            : listing.objects;
          const olderNotChecked = Boolean(flags.prefix) && listing.truncated;
          const lines = objects.map(
            (o) =>
              `${o.key}  ${formatBytes(o.size).padStart(9)}  ${o.contentType}  ${o.uploaderEmail ?? o.uploaderId}`,
          );
          lines.push(`${listing.totals.count} files, ${formatBytes(listing.totals.bytes)} in total`);
          if (olderNotChecked)
            lines.push(
              `Only the newest ${listing.newest} files were checked for --prefix ${flags.prefix}; older files were not.`,
            );
          print(
            Boolean(flags.json),
            {
              objects,
              totals: listing.totals,
              ...(flags.prefix ? { prefix: flags.prefix, olderNotChecked } : {}),
            },
            lines.join("\n"),
          );
        }, flags.verbose),
    );

  common(storage.command("put").argument("<file>", "the file to upload (at most 5 MiB)"))
    .description("upload one file; prints its key and url")
    .option("--public", "make the file public (default: private)")
    .option("--content-type <type>", "the stored type (default: guessed from the extension)")
    .option("--deploy <id|url>", "a hosted app instead of the dev server")
    .option("--token <token>", "an account token for a hosted app")
    .addHelpText(
      "after",
      "\nExamples:\n  platform storage put avatar.png --public\n  platform storage put notes.txt --content-type text/plain --json",
    )
    .action(
      (
        file: string,
        flags: TargetFlags & {
          json?: boolean;
          public?: boolean;
          contentType?: string;
          deploy?: string;
          token?: string;
          verbose?: boolean;
        },
      ) =>
        run(async () => {
          if (!existsSync(file) || !statSync(file).isFile())
            throw new PlatformError("not_found", `No such file: ${file}.`);
          const size = statSync(file).size;
          if (size > LIMITS.fileSize)
            throw new PlatformError(
              "too_large",
              `${file} is ${formatBytes(size)}; uploads are limited to 5 MiB. Nothing was sent.`,
            );
          const target = resolveTarget(flags.deploy, flags);
          const contentType = flags.contentType ?? (lookup(file) || "application/octet-stream");
          const token = target.hosted ? flags.token : await localGuestToken(target);
          const bar = progressBar(`uploading ${basename(file)}`);
          const response = await send(
            `${target.base}/storage${flags.public ? "?public=true" : ""}`,
            {
              method: "POST",
              headers: {
                "content-type": contentType,
                ...(token ? { authorization: `Bearer ${token}` } : {}),
              },
              body: await readFile(file),
              ...(bar ? { onProgress: bar.update } : {}),
            },
            target,
          ).finally(() => bar?.stop());
          if (response.status !== 201) throw failure(response, target, "put");
          const record = response.json<{ key: string; url: string; size: number; contentType: string }>();
          print(
            Boolean(flags.json),
            record,
            `uploaded ${basename(file)} (${formatBytes(record.size)}, ${record.contentType})\nkey: ${record.key}\nurl: ${record.url}`,
          );
        }, flags.verbose),
    );

  common(storage.command("get").argument("<key>", "public/<id> or private/<id>"))
    .description("download one file to --out or to standard output")
    .option("--out <file>", "write the bytes here (required with --json)")
    .option("--deploy <id|url>", "a hosted app instead of the dev server")
    .option("--token <token>", "an account token for a hosted app")
    .addHelpText(
      "after",
      "\nExamples:\n  platform storage get public/AbC... --out avatar.png\n  platform storage get private/AbC... > file.bin",
    )
    .action(
      (
        key: string,
        flags: TargetFlags & {
          json?: boolean;
          out?: string;
          deploy?: string;
          token?: string;
          verbose?: boolean;
        },
      ) =>
        run(async () => {
          if (flags.json && !flags.out) {
            process.stderr.write("error: --json needs --out <file>: the bytes cannot be printed as JSON.\n");
            process.exit(2);
          }
          const target = resolveTarget(flags.deploy, flags);
          const token = target.hosted ? flags.token : await localGuestToken(target);
          const response = await send(
            `${target.base}/storage/${key}`,
            { headers: token ? { authorization: `Bearer ${token}` } : {} },
            target,
          );
          if (response.status !== 200) throw failure(response, target, "get");
          const contentType = String(response.headers["content-type"] ?? "application/octet-stream");
          if (flags.out) {
            await writeFile(flags.out, response.body);
            print(
              Boolean(flags.json),
              { key, out: flags.out, size: response.body.length, contentType },
              `wrote ${formatBytes(response.body.length)} to ${flags.out}`,
            );
          } else {
            process.stdout.write(response.body);
          }
        }, flags.verbose),
    );

  common(storage.command("delete").argument("<key>", "public/<id> or private/<id>"))
    .description("delete one file (hosted: the owner's credentials, any uploader's file)")
    .option("--deploy <id|url>", "a hosted app instead of the dev server")
    .option("--token <token>", "owner token for a hosted app (default: $PLATFORM_TOKEN, then your login)")
    .addHelpText(
      "after",
      "\nExamples:\n  platform storage delete public/AbC...\n  platform storage delete private/AbC... --deploy todo --host http://localhost:8080",
    )
    .action(
      (
        key: string,
        flags: TargetFlags & { json?: boolean; deploy?: string; token?: string; verbose?: boolean },
      ) =>
        run(async () => {
          const target = resolveTarget(flags.deploy, flags);
          let response: HttpResponse;
          if (target.hosted) {
            const token = ownerToken(target.controlPlane ?? target.base, flags.token);
            if (!token)
              throw new PlatformError(
                "unauthorized",
                "Hosted deletes need the owner's credentials: platform login, PLATFORM_TOKEN or --token.",
              );
            response = await send(
              `${target.controlPlane}/v1/me/deploys/${target.deployId}/storage/${key}`,
              { method: "DELETE", headers: { authorization: `Bearer ${token}` } },
              target,
            );
          } else {
            const token = await localGuestToken(target);
            response = await send(
              `${target.base}/storage/${key}`,
              { method: "DELETE", headers: { authorization: `Bearer ${token}` } },
              target,
            );
          }
          if (response.status !== 204) throw failure(response, target, "delete");
          print(Boolean(flags.json), { key, deleted: true }, `deleted ${key}`);
        }, flags.verbose),
    );
}

/** `platform auth as <name>`: the local guest identity for local commands. */
export function registerAuth(program: Command): void {
  const auth = program.command("auth").description("local identity settings");
  auth
    .command("as")
    .argument("<name>", "guest name: local commands act as guest:<name> (default guest:cli)")
    .description("set the local guest identity used by storage commands against the dev server")
    .addHelpText("after", "\nExamples:\n  platform auth as alice")
    .action(async (name: string) => {
      const { readConfig: read, writeConfig } = await import("../config.js");
      if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name)) {
        process.stderr.write("error: a guest name is 1-63 lowercase letters, digits, '_' or '-'.\n");
        process.exit(2);
      }
      const config = read();
      config.guestName = name;
      writeConfig(config);
      process.stdout.write(`local commands now act as guest:${name}\n`);
    });
}
