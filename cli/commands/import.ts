import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { Command } from "commander";
import { CLAIM_TOKEN_PREFIX } from "../../host/auth/developers.js";
import { errorFromWire } from "../../sdk/client/errors.js";
import { LIMITS, printable } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { parseDeploymentId } from "../flags.js";
import { onLines, openRequest } from "../http.js";
import { formatBytes, issuedToken, plural, printResult, printWarning, runAction } from "../output.js";
import { remoteErrorOf, succeeded } from "../remote-error.js";
import {
  endProgress,
  progressLine,
  type TransferFlags,
  transferOptions,
  transferUrl,
} from "../transfer-target.js";

/** What the host answers for an import (host/http/export-routes.ts). */
interface ImportView {
  deployment: { id: string };
  claimToken?: unknown;
  tables: Record<string, number>;
  objects: number;
  replaced: boolean;
}

/** A progress step the host reports while it imports. */
type Progress =
  | { step: "received" }
  | { step: "waiting" }
  | { step: "checking"; rows: number }
  | { step: "objects"; done: number; total: number }
  | { step: "committing" };

function describe(progress: Progress): string {
  switch (progress.step) {
    case "received":
      return "checking the archive";
    case "waiting":
      return "waiting for another import on the host, or a deploy of this deployment, to finish";
    case "checking":
      return `checking the archive: ${plural(progress.rows, "row")}`;
    case "objects":
      return `writing objects: ${progress.done}/${progress.total}`;
    case "committing":
      return "committing";
  }
}

/** Uploads `file` and follows the host's NDJSON progress; resolves with the result. */
async function upload(url: URL, headers: Record<string, string>, file: string): Promise<ImportView> {
  const size = (await stat(file)).size;
  return new Promise((resolve, reject) => {
    const req = openRequest(
      url,
      {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/zip",
          "content-length": String(size),
          accept: "application/x-ndjson",
        },
      },
      (res) => {
        if (!succeeded(res.statusCode)) {
          remoteErrorOf(res, url).then(reject, reject);
          return;
        }
        let result: ImportView | undefined;
        let failed: PlatformError | undefined;
        const lines = onLines(
          res,
          (text) => {
            const message = JSON.parse(text) as { progress?: Progress; import?: ImportView; error?: unknown };
            if (message.progress) progressLine(describe(message.progress));
            if (message.import) result = message.import;
            if (message.error) failed = errorFromWire(message.error);
          },
          LIMITS.cliAnswerBytes,
        );
        lines.then(() => {
          endProgress();
          if (failed) reject(failed);
          else if (result) resolve(result);
          else
            reject(
              new PlatformError("unavailable", "The import's answer was cut short; check the deployment."),
            );
        }, reject);
      },
    );
    req.on("error", (error) =>
      reject(
        new PlatformError(
          "unavailable",
          `Cannot reach ${url.origin} (${error.message}). Is the server running?`,
        ),
      ),
    );
    let sent = 0;
    const body = createReadStream(file);
    body.on("data", (chunk) => {
      sent += chunk.length;
      if (process.stderr.isTTY) progressLine(`uploading: ${formatBytes(sent)} of ${formatBytes(size)}`);
    });
    body.on("error", reject);
    body.pipe(req);
  });
}

/** `platform import <archive> [deploy_id]`: loads an export into a new or empty deployment. */
export function registerImport(program: Command): void {
  transferOptions(
    program
      .command("import")
      .argument("<archive>", "a zip archive written by platform export")
      .argument(
        "[deploy_id]",
        "a hosted deployment, new or empty (needs --host); none: the dev server's",
        parseDeploymentId,
      )
      .description(
        "load an export into a new or empty deployment, all or nothing (ids, createdAt and object keys kept)",
      )
      .option("--replace", "replace the rows and files of a deployment that has some"),
  )
    .addHelpText(
      "after",
      "\nExamples:\n  platform import app.zip\n  platform import todo.zip todo-copy --host http://localhost:8080",
    )
    .action((archive: string, deployId: string | undefined, flags: TransferFlags & { replace?: boolean }) =>
      runAction(async () => {
        const { url, headers, label } = transferUrl(deployId, "import", flags);
        if (flags.replace) url.searchParams.set("replace", "1");
        await stat(archive).catch(() => {
          throw new PlatformError("not_found", `No file ${archive}.`);
        });
        const result = await upload(url, headers, archive);
        const rows = Object.values(result.tables).reduce((sum, n) => sum + n, 0);
        printResult(
          flags.json === true,
          result,
          `imported into ${label}: ${plural(Object.keys(result.tables).length, "table")}, ${plural(rows, "row")}, ${plural(result.objects, "object")}${result.replaced ? " (replaced what it held)" : ""}`,
        );
        if (result.claimToken !== undefined && flags.json !== true) {
          // Only a token of the shape the host issues: a server's own "token" is not echoed.
          const claimToken = issuedToken(result.claimToken, CLAIM_TOKEN_PREFIX);
          if (claimToken)
            process.stdout.write(
              `claim token for ${printable(String(result.deployment?.id))}: ${claimToken} (shown once; give it to the deployment's developer)\n`,
            );
          else
            printWarning(
              "the host's answer carried a claim token of another shape than the host issues; not shown.",
            );
        }
      }),
    );
}
