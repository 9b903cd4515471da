import { basename, resolve } from "node:path";
import { Presets, SingleBar } from "cli-progress";
import { type Command, Option } from "commander";
import { CLAIM_TOKEN_PREFIX } from "../../host/auth/developers.js";
import { errorFromWire } from "../../sdk/client/errors.js";
import { LIMITS, printable } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { bundleCapsule } from "../bundle.js";
import { type ClientUpload, collectClientFiles } from "../client-files.js";
import { ownerToken } from "../config.js";
import { envFileTrackedByGit, readServerEnvFile } from "../env-file.js";
import { parseDeploymentId, parseHostUrl } from "../flags.js";
import { onLines, openRequest, writeBody } from "../http.js";
import { issuedToken, plural, printWarning, runAction } from "../output.js";
import { remoteErrorOf, succeeded } from "../remote-error.js";

/**
 * Sends a deploy and follows its NDJSON progress: an upload bar, then each index backfill's row
 * count (in place on a terminal, one line per step otherwise), then the result or the error.
 * Resolves with the deployment as the host answered it.
 */
function deployStreaming(url: URL, token: string, body: string): Promise<DeployedView> {
  const tty = process.stderr.isTTY === true;
  const payload = Buffer.from(body);
  const bar = tty
    ? new SingleBar(
        { format: "uploading bundle [{bar}] {percentage}%", stream: process.stderr, hideCursor: true },
        Presets.shades_classic,
      )
    : undefined;
  return new Promise((resolve, reject) => {
    const req = openRequest(
      url,
      {
        method: "PUT",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          accept: "application/x-ndjson",
          "content-length": payload.length,
        },
      },
      (res) => {
        bar?.stop();
        if (!succeeded(res.statusCode)) {
          remoteErrorOf(res, url).then(reject, reject);
          return;
        }
        let failed: PlatformError | undefined;
        let deployed: DeployedView | undefined;
        // One line is the result, which repeats the declaration: lines as long as a whole answer.
        const lines = onLines(
          res,
          (text) => {
            const message = JSON.parse(text) as {
              progress?: { table: string; index: string; done: number };
              deploy?: DeployedView;
              error?: unknown;
            };
            if (message.deploy) deployed = message.deploy;
            if (message.progress) {
              const { table, index, done } = message.progress;
              // A tenant's table and index names, and whatever a server sends, shown as text.
              const line = printable(`backfilling ${table}.${index}: ${plural(Number(done), "row")}`);
              process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
            } else if (message.error) {
              failed = errorFromWire(message.error);
            }
          },
          LIMITS.cliAnswerBytes,
        );
        lines.then(() => {
          if (tty) process.stderr.write("\n");
          if (failed) reject(failed);
          else if (deployed) resolve(deployed);
          // A success status alone is no deploy: only the host's last line says it was done.
          else
            reject(
              new PlatformError(
                "unavailable",
                "The host's answer ended without the deploy's result (cut short, or not a platform host's answer): check the deployment, and deploy again.",
              ),
            );
        }, reject);
      },
    );
    req.on("error", (error) =>
      reject(new PlatformError("unavailable", `Cannot reach ${url.origin} (${error.message}).`)),
    );
    bar?.start(payload.length, 0);
    writeBody(req, payload, (sent) => bar?.update(sent));
  });
}

/** What `platform deploy` reads of the deployment the host answers with. */
interface DeployedView {
  /** Only when the deploy just created a deployment without an owner (an operator's deploy). */
  claimToken?: unknown;
}

/** The line saying which web client a deploy uploads (`client: 3 files, 140.2 KiB`). */
function clientSummary(files: readonly ClientUpload[]): string {
  if (files.length === 0) return "client: none (no client/ folder)\n";
  const bytes = files.reduce((sum, file) => sum + file.bytes.length, 0);
  return `client: ${plural(files.length, "file")}, ${(bytes / 1024).toFixed(1)} KiB\n`;
}

/** A deployment id from a folder name: lowercase letters, digits and '-'. */
function idFromDir(dir: string): string {
  const id = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return id || "app";
}

/**
 * An operator's deploy created a deployment nobody owns yet: its claim token is shown this once
 * (the host keeps only a hash), with what its developer runs to take it over. Only a token of the
 * shape the host issues is shown, since it is pasted into a command line: a quote in a server's
 * "token" injected into the `curl` line the user copies.
 */
function printClaimToken(id: string, token: unknown, base: URL): void {
  const claimToken = issuedToken(token, CLAIM_TOKEN_PREFIX);
  if (!claimToken) {
    printWarning("the host's answer carried a claim token of another shape than the host issues; not shown.");
    return;
  }
  process.stdout.write(
    `claim token for ${id}: ${claimToken} (shown once; give it to the deployment's developer)\n` +
      `  the developer claims it with: curl -X POST ${base.origin}/v1/deploys/${id}/claim ` +
      `-H 'Authorization: Bearer <developer token>' -H 'content-type: application/json' ` +
      `-d '{"claimToken":"${claimToken}"}'\n`,
  );
}

/** `platform deploy [dir] --host <url>`: bundles the capsule and deploys it through the operator API. */
export function registerDeploy(program: Command): void {
  program
    .command("deploy")
    .argument("[dir]", "capsule folder (with server/index.ts)", ".")
    .description("bundle a capsule and deploy it to a host (creates or updates the deployment)")
    .addOption(
      new Option("--host <url>", "control plane URL of the host, e.g. http://localhost:8080")
        .makeOptionMandatory()
        .argParser(parseHostUrl),
    )
    .addOption(
      new Option("--name <id>", "deployment id (default: the folder name)").argParser(parseDeploymentId),
    )
    .option(
      "--token <token>",
      "developer or operator token (default: $PLATFORM_TOKEN, then `platform login`, then $PLATFORM_ADMIN_TOKEN)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  PLATFORM_ADMIN_TOKEN=secret platform deploy fixtures/todo --host http://localhost:8080 --name todo",
    )
    .action((dirArg: string, flags: { host: string; name?: string; token?: string }) =>
      runAction(async () => {
        const dir = resolve(dirArg);
        const id = flags.name ?? idFromDir(dir);
        const token = ownerToken(flags.host, flags.token);
        if (!token)
          throw new PlatformError(
            "unauthorized",
            "No credentials: run platform login --host <url>, or set PLATFORM_TOKEN (or PLATFORM_ADMIN_TOKEN).",
          );
        process.stdout.write(`bundling ${printable(dir)}\n`);
        if (envFileTrackedByGit(dir)) {
          printWarning(
            ".env.platform.server is tracked by git, so its secrets are in your history. Remove it (git rm --cached .env.platform.server), add it to .gitignore, and rotate the secrets.",
          );
        }
        const { code } = await bundleCapsule(dir);
        const env = readServerEnvFile(dir);
        if (env === undefined)
          process.stdout.write(
            "env: no .env.platform.server, the deployment keeps its values (an empty file clears them)\n",
          );
        const client = await collectClientFiles(dir);
        process.stdout.write(clientSummary(client));
        const base = new URL(flags.host);
        const deployed = await deployStreaming(
          new URL(`/v1/deploys/${encodeURIComponent(id)}`, base),
          token,
          JSON.stringify({
            code,
            // Left out without a file: the host keeps the values it has.
            ...(env === undefined ? {} : { env }),
            // Always sent: an empty list takes down a client an earlier deploy served.
            client: client.map((file) => ({ path: file.path, data: file.bytes.toString("base64") })),
          }),
        );
        process.stdout.write(`deployed ${id}: ${base.protocol}//${id}.${base.host}\n`);
        if (deployed.claimToken !== undefined) printClaimToken(id, deployed.claimToken, base);
      }),
    );
}
