import { existsSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { Presets, SingleBar } from "cli-progress";
import type { Command } from "commander";
import { lookup } from "mime-types";
import { LIMITS, printable } from "../../../sdk/protocol/index.js";
import { PlatformError } from "../../../sdk/values/index.js";
import { formatBytes, formatMebibytes, printResult, runAction } from "../../output.js";
import {
  hostedAppOptions,
  localGuestToken,
  resolveTarget,
  send,
  storageFailure,
  type TargetFlags,
  targetOptions,
} from "./target.js";

interface PutFlags extends TargetFlags {
  public?: boolean;
  contentType?: string;
  deploy?: string;
  token?: string;
}

/** `platform storage put <file>`: uploads one file (as the local guest, or with an account token). */
export function registerStoragePut(storage: Command): void {
  hostedAppOptions(
    targetOptions(
      storage
        .command("put")
        .argument("<file>", `the file to upload (at most ${formatMebibytes(LIMITS.fileSize)})`),
    )
      .description("upload one file; prints its key and url")
      .option("--public", "make the file public (default: private)")
      .option("--content-type <type>", "the stored type (default: guessed from the extension)"),
    "an account token for a hosted app",
  )
    .addHelpText(
      "after",
      "\nExamples:\n  platform storage put avatar.png --public\n  platform storage put notes.txt --content-type text/plain --json",
    )
    .action((file: string, flags: PutFlags) => runAction(() => put(file, flags), flags.verbose));
}

async function put(file: string, flags: PutFlags): Promise<void> {
  if (!existsSync(file) || !statSync(file).isFile())
    throw new PlatformError("not_found", `No such file: ${file}.`);
  const size = statSync(file).size;
  if (size > LIMITS.fileSize)
    throw new PlatformError(
      "too_large",
      `${file} is ${formatBytes(size)}; uploads are limited to ${formatMebibytes(LIMITS.fileSize)}. Nothing was sent.`,
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
  if (response.status !== 201) throw storageFailure(response, target, "put");
  const record = response.json<{ key: string; url: string; size: number; contentType: string }>();
  printResult(
    Boolean(flags.json),
    record,
    `uploaded ${basename(file)} (${formatBytes(record.size)}, ${printable(record.contentType)})\nkey: ${printable(record.key)}\nurl: ${printable(record.url)}`,
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
