import { mkdir, mkdtemp, readdir, rename, rm, rmdir, stat } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { basename, dirname, join, resolve } from "node:path";
import { Presets, SingleBar } from "cli-progress";
import { type Command, Option } from "commander";
import type { BackupManifest, RestoreProgress } from "../../host/index.js";
import { printable } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { parseHostUrl } from "../flags.js";
import { openRequest } from "../http.js";
import { formatBytes, plural, printResult, printWarning, runAction } from "../output.js";
import { remoteErrorOf, succeeded } from "../remote-error.js";

interface BackupFlags {
  out: string;
  host: string;
  token?: string;
  json?: boolean;
}

/** Refuses an `--out` that is a file or a folder with anything in it; true when it exists (empty). */
async function checkOut(out: string, flag: string): Promise<boolean> {
  const found = await stat(out).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (!found) return false;
  if (!found.isDirectory())
    throw new PlatformError("conflict", `--out ${flag} is a file; name a new or empty folder.`);
  if ((await readdir(out)).length > 0)
    throw new PlatformError(
      "conflict",
      `--out ${flag} is not empty; a backup is written only to a new or empty folder, never over other data.`,
    );
  return true;
}

/** Asks the host for its backup stream (`GET /v1/backup`); resolves with the response once it began. */
function openBackup(host: string, token: string): Promise<IncomingMessage> {
  const url = new URL("/v1/backup", host);
  return new Promise((resolvePromise, reject) => {
    const req = openRequest(
      url,
      { headers: { authorization: `Bearer ${token}`, accept: "application/x-ndjson" } },
      (res) => {
        if (!succeeded(res.statusCode)) remoteErrorOf(res, url).then(reject, reject);
        else resolvePromise(res);
      },
    );
    req.on("error", (error) =>
      reject(
        new PlatformError(
          "unavailable",
          `Cannot reach ${url.origin} (${error.message}). Is the host running?`,
        ),
      ),
    );
    req.end();
  });
}

/** A progress bar on a terminal (entries, then file bytes); nothing when stderr is not one. */
function progressBar(): { update(progress: RestoreProgress): void; stop(): void } {
  if (!process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new SingleBar(
    {
      format: "backing up [{bar}] {percentage}% | {entries} entries | {files}",
      stream: process.stderr,
      hideCursor: true,
    },
    Presets.shades_classic,
  );
  let started = false;
  return {
    update: ({ head, written }) => {
      const payload = {
        entries: `${written.entries.toLocaleString("en-US")}/${head.entries.toLocaleString("en-US")}`,
        files: `${plural(written.objects, "file")} (${formatBytes(written.objectBytes)}/${formatBytes(head.objectBytes)})`,
      };
      const done = written.entries + written.objectBytes;
      if (!started) {
        started = true;
        bar.start(Math.max(1, head.entries + head.objectBytes), done, payload);
      } else bar.update(done, payload);
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

/** Downloads the host's backup into a new folder beside `out`, then moves it into place. */
async function writeBackup(
  flags: BackupFlags,
  token: string,
): Promise<{ out: string; manifest: BackupManifest }> {
  const out = resolve(flags.out);
  const existed = await checkOut(out, flags.out);
  await mkdir(dirname(out), { recursive: true });
  const partial = await mkdtemp(join(dirname(out), `.${basename(out)}.partial-`));
  const bar = progressBar();
  try {
    const response = await openBackup(flags.host, token);
    // Loaded once the host answered: the host's modules take a moment, and a refusal needs none.
    const { restoreBackup } = await import("../../host/index.js");
    const manifest = await restoreBackup(response, partial, (progress) => bar.update(progress)).finally(() =>
      bar.stop(),
    );
    if (existed) await rmdir(out);
    await rename(partial, out);
    return { out, manifest };
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    throw error;
  }
}

/**
 * `platform host backup --out <dir>`: a consistent copy of a running host's whole data (every
 * deployment, record, session, usage count and stored file), taken from one snapshot while the
 * host serves, written as a data folder `platform host --data <dir>` starts from. Needs the
 * operator token. See docs/operators.md "Backups".
 */
export function registerHostBackup(host: Command): void {
  host
    .command("backup")
    .description("write a consistent copy of a running host's whole data to a new data folder")
    .requiredOption("--out <dir>", "the data folder to write: new, or an empty folder")
    .addOption(
      new Option("--host <url>", "control plane URL of the host")
        .default("http://localhost:8080")
        .argParser(parseHostUrl),
    )
    .option("--token <token>", "the operator token (default: $PLATFORM_ADMIN_TOKEN)")
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      "\nExamples:\n  PLATFORM_ADMIN_TOKEN=secret platform host backup --host http://localhost:8080 --out ./backup-2026-11-30\n  PLATFORM_ADMIN_TOKEN=secret platform host --data ./backup-2026-11-30 --port 8081",
    )
    .action((flags: BackupFlags) =>
      runAction(async () => {
        const token = flags.token ?? process.env.PLATFORM_ADMIN_TOKEN;
        if (!token)
          throw new PlatformError(
            "unauthorized",
            "A host backup needs the operator token: pass --token or set PLATFORM_ADMIN_TOKEN.",
          );
        const { out, manifest } = await writeBackup(flags, token);
        const { totals } = manifest;
        if (totals.missing.length > 0)
          printWarning(
            `${plural(totals.missing.length, "stored file")} had no bytes on the host (deleted by another host during the backup?); their records are in the backup without them: ${totals.missing.join(", ")}`,
          );
        printResult(
          flags.json === true,
          { out, takenAt: manifest.takenAt, store: manifest.store, ...totals },
          `backup of ${flags.host} as of ${printable(manifest.takenAt)} written to ${flags.out}: ${plural(totals.entries, "entry", "entries")}, ${plural(totals.objects, "file")} (${formatBytes(totals.objectBytes)})\n` +
            `start a host on it with: platform host --data ${flags.out} (set PLATFORM_ADMIN_TOKEN: the backup holds no operator token)`,
        );
      }),
    );
}
