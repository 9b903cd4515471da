import { constants } from "node:fs";
import { mkdtemp, open, readdir, realpath, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";
import { isPublishedClientPath } from "../host/deployments/client-paths.js";
import { rootLinkedOutside } from "../host/deployments/client-root.js";
import { LIMITS, printable } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";
import { buildClientApp } from "./client-build.js";
import { printWarning } from "./output.js";

/** One file `platform deploy` uploads for the deployment's web client. */
export interface ClientUpload {
  path: string;
  bytes: Buffer;
}

/**
 * Every file under `root`, by its `/`-separated path relative to `root`, with the real path its
 * bytes are read from; none when `root` does not exist. A symbolic link is followed only when its
 * real path stays inside `root` (an alias among the app's own files); one that leaves it
 * (`logo.png -> ~/.ssh/id_ed25519`, or a folder link) would publish whatever it leads to, so it is
 * left out and passed to `skip` with the reason, as is one that leads nowhere or to a folder that
 * holds it (a loop), and anything that is not a regular file or a folder (a pipe, a socket).
 */
async function filesUnder(
  root: string,
  skip: (path: string, reason: string) => void,
): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const top = await realpath(root).catch(() => undefined);
  if (top === undefined || !(await stat(top)).isDirectory()) return files;
  const walk = async (dir: string, prefix: string, holders: readonly string[]): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = `${prefix}${entry.name}`;
      let real = join(dir, entry.name);
      if (entry.isSymbolicLink()) {
        const target = await realpath(real).catch(() => undefined);
        if (target === undefined) {
          skip(path, "it is a symbolic link that leads nowhere");
          continue;
        }
        if (target !== top && !target.startsWith(top + sep)) {
          skip(path, `it is a symbolic link to ${target}, outside client/`);
          continue;
        }
        if (holders.includes(target)) {
          skip(path, "it is a symbolic link to a folder that holds it");
          continue;
        }
        real = target;
      }
      // `real` holds no link now (a real path, or a name readdir saw as no link), so stat is lstat.
      const stats = await stat(real);
      if (stats.isDirectory()) await walk(real, `${path}/`, [...holders, real]);
      else if (stats.isFile()) files.set(path, real);
      // Left out silently before: the developer saw the deploy succeed and the file missing.
      else skip(path, "it is not a regular file (a pipe, socket or device)");
    }
  };
  await walk(top, "", [top]);
  return files;
}

/** The refusal of client file `path`, `size` (`1900000000`, `more than 8388608`) bytes long. */
function fileTooLarge(path: string, size: string): PlatformError {
  return new PlatformError(
    "too_large",
    `client file ${path} is ${size} bytes; one file may be at most ${LIMITS.clientFileBytes} bytes.`,
  );
}

/**
 * The bytes of `file` (`path` in `client/`), refusing to follow a link put in its place since it
 * was listed: what is published is what {@link filesUnder} checked. Its size is checked on the
 * open file before anything is read, and no more than one byte past the limit is ever read (the
 * file may grow meanwhile): a 1.9 GB sparse file was read whole before the 8 MiB refusal (an
 * attack review).
 */
async function readListedFile(file: string, path: string): Promise<Buffer> {
  const limit = LIMITS.clientFileBytes;
  const flags = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
  const handle = await open(file, flags);
  try {
    const stats = await handle.stat();
    if (!stats.isFile())
      throw new PlatformError("bad_request", `client file ${path} changed into something else while read.`);
    if (stats.size > limit) throw fileTooLarge(path, String(stats.size));
    const chunks: Buffer[] = [];
    for await (const chunk of handle.createReadStream({ start: 0, end: limit, autoClose: false }))
      chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    if (bytes.length > limit) throw fileTooLarge(path, `more than ${limit}`);
    return bytes;
  } finally {
    await handle.close();
  }
}

/**
 * The web client `platform deploy` sends, as `platform dev` serves it: the files of `client/` and
 * its production build (`main.js`, which wins over a file of the same name). Refused here, before
 * anything is uploaded, when it exceeds the host's limits (the host checks them again). A symbolic
 * link that leaves `client/` is never published: `warn` (a `warning:` line on stderr) names each
 * one left out and says why, escape codes in its name or target shown escaped (a link named with
 * them reached the terminal as it was: an attack review).
 */
export async function collectClientFiles(
  capsuleDir: string,
  { warn = printWarning }: { warn?: (message: string) => void } = {},
): Promise<ClientUpload[]> {
  const out = await mkdtemp(join(tmpdir(), "platform-deploy-client-"));
  try {
    await buildClientApp(capsuleDir, out, { production: true });
    const files = new Map<string, string>();
    const skipped = (path: string, reason: string) => {
      // Escaped: a cloned template's file names, and where its links lead, are anyone's text.
      if (isPublishedClientPath(path))
        warn(`client/${printable(path)} is not published: ${printable(reason)}.`);
    };
    const client = join(capsuleDir, "client");
    const outside = await rootLinkedOutside(client);
    if (outside !== undefined)
      warn(
        `client/ is not published: it is a symbolic link to ${printable(outside)}, outside the project or into a dot-folder of it. Copy or build the files into client/.`,
      );
    else
      for (const [path, file] of await filesUnder(client, skipped))
        if (isPublishedClientPath(path)) files.set(path, file);
    for (const [path, file] of await filesUnder(out, skipped)) files.set(path, file);
    if (files.size > LIMITS.clientFiles)
      throw new PlatformError(
        "too_large",
        `client/ holds ${files.size} files to upload; a deploy takes at most ${LIMITS.clientFiles}.`,
      );
    const pathChars = [...files.keys()].reduce((sum, path) => sum + path.length, 0);
    if (pathChars > LIMITS.clientPathChars)
      throw new PlatformError(
        "too_large",
        `client/'s file paths are ${pathChars} characters together; a deploy takes at most ${LIMITS.clientPathChars}. Use shorter paths or fewer files.`,
      );
    const uploads: ClientUpload[] = [];
    let total = 0;
    for (const [path, file] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const bytes = await readListedFile(file, path);
      total += bytes.length;
      if (total > LIMITS.clientBytes)
        throw new PlatformError(
          "too_large",
          `The client files are more than ${LIMITS.clientBytes} bytes together, the most a deploy takes.`,
        );
      uploads.push({ path, bytes });
    }
    return uploads;
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}
