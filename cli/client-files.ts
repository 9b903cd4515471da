import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { LIMITS } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";
import { buildClientApp } from "./client-build.js";

/** One file `platform deploy` uploads for the deployment's web client. */
export interface ClientUpload {
  path: string;
  bytes: Buffer;
}

/**
 * Whether a file of `client/` is uploaded: the app's sources (`.ts`, `.tsx`, `.jsx`, `.mts`,
 * `.cts`, `tsconfig*.json`) are built into `main.js` instead, and dot-files and dot-folders (`.env`,
 * `.DS_Store`, `.git`) may hold secrets or junk, except `.well-known/`, which sites publish on purpose.
 */
function uploaded(path: string): boolean {
  const names = path.split("/");
  if (names.some((name, i) => name.startsWith(".") && !(i === 0 && name === ".well-known"))) return false;
  const file = names[names.length - 1] ?? "";
  return !/\.(tsx?|jsx|mts|cts)$/.test(file) && !/^tsconfig.*\.json$/.test(file);
}

/** Every file under `root` as `/`-separated relative paths; none when it does not exist. */
async function filesUnder(root: string): Promise<string[]> {
  const names = await readdir(root, { recursive: true }).catch(() => [] as string[]);
  const files: string[] = [];
  for (const name of names)
    if ((await stat(join(root, name))).isFile())
      files.push(relative(root, join(root, name)).split(sep).join("/"));
  return files;
}

/**
 * The web client `platform deploy` sends, as `platform dev` serves it: the files of `client/` and
 * its production build (`main.js`, which wins over a file of the same name). Refused here, before
 * anything is uploaded, when it exceeds the host's limits (the host checks them again).
 */
export async function collectClientFiles(capsuleDir: string): Promise<ClientUpload[]> {
  const out = await mkdtemp(join(tmpdir(), "platform-deploy-client-"));
  try {
    await buildClientApp(capsuleDir, out, { production: true });
    const files = new Map<string, string>();
    const folder = join(capsuleDir, "client");
    for (const path of await filesUnder(folder)) if (uploaded(path)) files.set(path, join(folder, path));
    for (const path of await filesUnder(out)) files.set(path, join(out, path));
    if (files.size > LIMITS.clientFiles)
      throw new PlatformError(
        "too_large",
        `client/ holds ${files.size} files to upload; a deploy takes at most ${LIMITS.clientFiles}.`,
      );
    const uploads: ClientUpload[] = [];
    let total = 0;
    for (const [path, file] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const bytes = await readFile(file);
      if (bytes.length > LIMITS.clientFileBytes)
        throw new PlatformError(
          "too_large",
          `client file ${path} is ${bytes.length} bytes; one file may be at most ${LIMITS.clientFileBytes} bytes.`,
        );
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
