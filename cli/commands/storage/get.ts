import { writeFile } from "node:fs/promises";
import { type Command, InvalidArgumentError } from "commander";
import { parseObjectKey, pathOf } from "../../flags.js";
import { formatBytes, printResult, runAction } from "../../output.js";
import {
  hostedAppOptions,
  localGuestToken,
  resolveTarget,
  send,
  storageFailure,
  type TargetFlags,
  targetOptions,
} from "./target.js";

interface GetFlags extends TargetFlags {
  out?: string;
  deploy?: string;
  token?: string;
}

/** `platform storage get <key>`: downloads one file to `--out` or to standard output. */
export function registerStorageGet(storage: Command): void {
  hostedAppOptions(
    targetOptions(storage.command("get").argument("<key>", "public/<id> or private/<id>", parseObjectKey))
      .description("download one file to --out or to standard output")
      .option("--out <file>", "write the bytes here (required with --json)"),
    "an account token for a hosted app",
  )
    .addHelpText(
      "after",
      "\nExamples:\n  platform storage get public/AbC... --out avatar.png\n  platform storage get private/AbC... > file.bin",
    )
    .action((key: string, flags: GetFlags) => runAction(() => get(key, flags), flags.verbose));
}

async function get(key: string, flags: GetFlags): Promise<void> {
  if (flags.json && !flags.out)
    throw new InvalidArgumentError("--json needs --out <file>: the bytes cannot be printed as JSON.");
  // A stored file is anyone's upload: its bytes may hold escape codes a terminal would act on.
  if (!flags.out && process.stdout.isTTY)
    throw new InvalidArgumentError(
      "Standard output is a terminal: write the file with --out <file>, or send it elsewhere (`> file`, `| less`).",
    );
  const target = resolveTarget(flags.deploy, flags);
  const token = target.hosted ? flags.token : await localGuestToken(target);
  const response = await send(
    `${target.base}/storage/${pathOf(key)}`,
    { headers: token ? { authorization: `Bearer ${token}` } : {} },
    target,
  );
  if (response.status !== 200) throw storageFailure(response, target, "get");
  const contentType = String(response.headers["content-type"] ?? "application/octet-stream");
  if (flags.out) {
    await writeFile(flags.out, response.body);
    printResult(
      Boolean(flags.json),
      { key, out: flags.out, size: response.body.length, contentType },
      `wrote ${formatBytes(response.body.length)} to ${flags.out}`,
    );
  } else {
    process.stdout.write(response.body);
  }
}
