import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { open, realpath, stat } from "node:fs/promises";
import { join, normalize, resolve, sep } from "node:path";
import type { Context, Next } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError, PlatformError } from "../../sdk/values/index.js";
import { isPublishedClientPath } from "../deployments/client-paths.js";
import { rootLinkedOutside } from "../deployments/client-root.js";
import { sendClientFile } from "./client-file-response.js";

const inside = (base: string, path: string) => path === base || path.startsWith(base + sep);
const realOrNone = (path: string) => realpath(path).catch(() => undefined);

/**
 * The bytes of `file` when it is a regular file, else undefined. Opened without following a link
 * and without blocking, then checked on the open handle: a FIFO in `client/` (`pipe.txt`) was read
 * as it was, each GET holding one of libuv's four threads until a writer came, and four of them
 * left every other file read of the process waiting (an attack review).
 */
async function readRegularFile(file: string): Promise<Buffer | undefined> {
  const flags = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
  const handle = await open(file, flags).catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return undefined;
    // Refused by its size, unread, as `platform deploy` refuses it: a 2 GB file was read whole.
    if (stats.size > LIMITS.clientFileBytes)
      throw new PlatformError(
        "too_large",
        `This file is ${stats.size} bytes; platform deploy publishes client files of at most ${LIMITS.clientFileBytes} bytes, so platform dev does not serve it either.`,
      );
    return await handle.readFile();
  } catch (error) {
    if (isPlatformError(error)) throw error;
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * The file `relative` names under `base` (a folder's `index.html`), or undefined when there is none
 * or its real path leaves `base`: a symbolic link out of `client/` (`logo.png -> ~/.ssh/id_ed25519`)
 * is not served, as `platform deploy` does not publish it. One that stays inside is served; only a
 * regular file is, as deploy publishes only those.
 */
async function readUnder(
  base: string,
  relative: string,
): Promise<{ file: string; body: Buffer } | undefined> {
  const path = resolve(base, relative === "" ? "index.html" : relative);
  if (!inside(base, path) || (await rootLinkedOutside(base)) !== undefined) return undefined;
  const file = (await stat(path).catch(() => undefined))?.isDirectory() ? join(path, "index.html") : path;
  const [realBase, realFile] = await Promise.all([realOrNone(base), realOrNone(file)]);
  if (realBase === undefined || realFile === undefined || !inside(realBase, realFile)) return undefined;
  // Read by the real path, which holds no link; the type still comes from the name asked for.
  const body = await readRegularFile(realFile);
  return body ? { file, body } : undefined;
}

/**
 * Serves a capsule's client at the app origin in `platform dev`: the first of `roots` holding the
 * path wins (the client build, then the `client/` folder). GET and HEAD only; `/` is `index.html`;
 * paths that would leave a folder, by `..` or by a symbolic link (a root that is one leading out of
 * its own folder too: see {@link rootLinkedOutside}), are not found, nor are the files
 * `platform deploy` does not publish (dot-files, sources). Headers as for
 * hosted client files ({@link sendClientFile}): type by extension, `nosniff`, an ETag, `no-cache`.
 */
export function staticFiles(roots: readonly string[]) {
  const bases = roots.map((root) => resolve(root));
  return async (ctx: Context, next: Next) => {
    if (ctx.method !== "GET" && ctx.method !== "HEAD") return next();
    const relative = normalize(decodeURIComponent(ctx.path)).replace(/^([/\\])+/, "");
    // What `platform deploy` leaves out (dot-files such as .env and .git, sources) is not served either.
    if (relative !== "" && !isPublishedClientPath(relative.split(sep).join("/"))) return next();
    for (const base of bases) {
      const found = await readUnder(base, relative);
      if (!found) continue;
      // The same answer as a hosted deployment's client files, but always revalidated: dev rebuilds.
      const etag = `"${createHash("sha256").update(found.body).digest("hex").slice(0, 32)}"`;
      sendClientFile(ctx, { path: found.file, body: found.body, etag }, false);
      return;
    }
    return next();
  };
}
