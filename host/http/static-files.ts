import { readFile, stat } from "node:fs/promises";
import { join, normalize, resolve, sep } from "node:path";
import type { Context, Next } from "koa";
import { lookup } from "mime-types";

/**
 * Serves a capsule's `client/` folder at the app origin in `platform dev` (GET and HEAD only;
 * `/` is `index.html`; paths that would leave the folder are not found).
 */
export function staticFiles(root: string) {
  const base = resolve(root);
  return async (ctx: Context, next: Next) => {
    if (ctx.method !== "GET" && ctx.method !== "HEAD") return next();
    const relative = normalize(decodeURIComponent(ctx.path)).replace(/^([/\\])+/, "");
    const path = resolve(base, relative === "" ? "index.html" : relative);
    if (path !== base && !path.startsWith(base + sep)) return next();
    const file = (await stat(path).catch(() => undefined))?.isDirectory() ? join(path, "index.html") : path;
    const body = await readFile(file).catch(() => undefined);
    if (!body) return next();
    ctx.type = lookup(file) || "application/octet-stream";
    ctx.set("Cache-Control", "no-cache");
    ctx.body = body;
  };
}
