import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import yauzl from "yauzl";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { parseDeploymentId } from "../flags.js";
import { openRequest } from "../http.js";
import { formatBytes, plural, printResult, runAction } from "../output.js";
import { remoteErrorOf, succeeded } from "../remote-error.js";
import {
  endProgress,
  progressLine,
  type TransferFlags,
  transferOptions,
  transferUrl,
} from "../transfer-target.js";

/** What the CLI reads of an archive's manifest (host/transfer/archive-format.ts). */
interface Manifest {
  deployment: string;
  tables: Record<string, number>;
  objects: { count: number; bytes: number; deletedDuringExport: number } | null;
}

const MANIFEST = Buffer.from("platform-export.json");

/**
 * Reads `platform-export.json` from a written archive: a truncated download has none. Names are
 * compared as bytes (`decodeStrings: false`: yauzl decodes names and comments not marked UTF-8 one
 * character at a time, megabytes of heap an entry), and the manifest is read only within
 * {@link LIMITS.cliAnswerBytes}: the archive came from a server.
 */
async function readManifest(path: string): Promise<Manifest> {
  const zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false, decodeStrings: false });
  try {
    for await (const entry of zip.eachEntry()) {
      if (!MANIFEST.equals(entry.fileName as unknown as Buffer)) continue;
      if (entry.uncompressedSize > LIMITS.cliAnswerBytes)
        throw new PlatformError(
          "too_large",
          `The archive's manifest is more than ${LIMITS.cliAnswerBytes} bytes.`,
        );
      const chunks: Buffer[] = [];
      for await (const chunk of await zip.openReadStreamPromise(entry)) chunks.push(chunk as Buffer);
      return JSON.parse(Buffer.concat(chunks).toString("utf8")) as Manifest;
    }
  } finally {
    zip.close();
  }
  throw new PlatformError("internal", "The archive has no manifest: the export did not finish.");
}

/** Downloads the archive to `partial`, showing the bytes received on a terminal. */
function download(url: URL, headers: Record<string, string>, partial: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const req = openRequest(url, { headers }, (res) => {
      if (!succeeded(res.statusCode)) {
        remoteErrorOf(res, url).then(reject, reject);
        return;
      }
      let received = 0;
      let shown = 0;
      res.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (process.stderr.isTTY && received - shown >= 256 * 1024) {
          shown = received;
          progressLine(`exporting: ${formatBytes(received)}`);
        }
      });
      // A new file (`wx`): never one already there, nor a link put in its place to another file.
      pipeline(res, createWriteStream(partial, { mode: 0o600, flags: "wx" })).then(
        () => {
          if (shown > 0) endProgress();
          if (res.complete) resolvePromise();
          else reject(new PlatformError("unavailable", "The export was interrupted; run it again."));
        },
        () => reject(new PlatformError("unavailable", "The export was interrupted; run it again.")),
      );
    });
    req.on("error", (error) =>
      reject(
        new PlatformError(
          "unavailable",
          `Cannot reach ${url.origin} (${error.message}). Is the server running?`,
        ),
      ),
    );
    req.end();
  });
}

/** `platform export [deploy_id] --out app.zip`: one snapshot of a deployment as a zip archive. */
export function registerExport(program: Command): void {
  transferOptions(
    program
      .command("export")
      .argument(
        "[deploy_id]",
        "a hosted deployment (needs --host); none: the dev server's",
        parseDeploymentId,
      )
      .description(
        "write one consistent snapshot of a deployment (rows, schema, settings without env values, stored files) to a zip archive",
      )
      .requiredOption("--out <file>", "the archive to write (replaced only once the export is complete)"),
  )
    .addHelpText(
      "after",
      "\nExamples:\n  platform export --out app.zip\n  platform export todo --host http://localhost:8080 --out todo.zip --no-objects",
    )
    .action((deployId: string | undefined, flags: TransferFlags & { out: string }) =>
      runAction(async () => {
        const { url, headers, label } = transferUrl(deployId, "export", flags);
        const out = resolve(flags.out);
        // Whatever is at the partial file's name goes first, a link as a link (a project shipping
        // `app.zip.partial` as a link to ~/.bashrc had the archive written over it), and the file
        // is then created new (`wx`). One name: an interrupted export's file is replaced next time.
        const partial = join(dirname(out), `.${basename(out)}.partial`);
        await rm(partial, { force: true });
        try {
          await download(url, headers, partial);
          const manifest = await readManifest(partial).catch((error: unknown) => {
            throw error instanceof PlatformError
              ? error
              : new PlatformError(
                  "internal",
                  `The downloaded archive is not readable: ${(error as Error).message}`,
                );
          });
          await rename(partial, out);
          const rows = Object.values(manifest.tables).reduce((sum, n) => sum + n, 0);
          const tables = Object.keys(manifest.tables).length;
          const objects = manifest.objects
            ? `, ${plural(manifest.objects.count, "object")} (${formatBytes(manifest.objects.bytes)})`
            : ", objects left out";
          printResult(
            flags.json === true,
            { out, deployment: manifest.deployment, tables: manifest.tables, objects: manifest.objects },
            `exported ${label}: ${plural(tables, "table")}, ${plural(rows, "row")}${objects} to ${flags.out}`,
          );
        } finally {
          await rm(partial, { force: true });
        }
      }),
    );
}
