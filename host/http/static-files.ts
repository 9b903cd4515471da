import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { join, normalize, resolve, sep } from "node:path";
import type { Context, Next } from "koa";
import { sendClientFile } from "./client-file-response.js";

async function readUnder(
  base: string,
  relative: string,
): Promise<{ file: string; body: Buffer } | undefined> {
  const path = resolve(base, relative === "" ? "index.html" : relative);
  if (path !== base && !path.startsWith(base + sep)) return undefined;
  const file = (await stat(path).catch(() => undefined))?.isDirectory() ? join(path, "index.html") : path;
  const body = await readFile(file).catch(() => undefined);
  return body ? { file, body } : undefined;
}

/**
 * Serves a capsule's client at the app origin in `platform dev`: the first of `roots` holding the
 * path wins (the client build, then the `client/` folder). GET and HEAD only; `/` is `index.html`;
 * paths that would leave a folder are not found. Headers as for hosted client files
 * ({@link sendClientFile}): type by extension, `nosniff`, an ETag, `no-cache`.
 */
export function staticFiles(roots: readonly string[]) {
  const bases = roots.map((root) => resolve(root));
  return async (ctx: Context, next: Next) => {
    if (ctx.method !== "GET" && ctx.method !== "HEAD") return next();
    const relative = normalize(decodeURIComponent(ctx.path)).replace(/^([/\\])+/, "");
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
