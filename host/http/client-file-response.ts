import { posix } from "node:path";
import type { Context } from "koa";
import { lookup } from "mime-types";

/** How long a file whose name carries its content's hash may be cached: a year, as is usual. */
const IMMUTABLE = "public, max-age=31536000, immutable";

/**
 * Whether a file name carries a hash of its content (`main-3F2K7ABC.js`, `app.9f8e7d6c5b.js`,
 * `index-BfT3x_9a.css`, and their `.map`): a token of 8+ characters after `-` or `.` just before the
 * extension, either lowercase hex with letters and digits, or letters and digits with an upper-case
 * letter and a digit (esbuild's and Vite's hashes). Such a name changes when its content does, so
 * browsers may keep it; a name that only looks hashed would be kept for a year across deploys,
 * hence the narrow rule (a name in doubt is revalidated, which costs only a `304`).
 */
export function isContentHashedName(path: string): boolean {
  const match = /[.-]([A-Za-z0-9_]{8,64})(?:\.[A-Za-z0-9]{1,10}){1,2}$/.exec(posix.basename(path));
  const token = match?.[1];
  if (!token || !/[0-9]/.test(token)) return false;
  return /^[0-9a-f]+$/.test(token) ? /[a-f]/.test(token) : /[A-Z]/.test(token);
}

/**
 * Answers a GET or HEAD with a file of a deployment's web client: the type from the file's
 * extension (`application/octet-stream` when unknown, never sniffed: `nosniff`), a strong ETag
 * (a `304` when the browser has it), and `Cache-Control: no-cache` (revalidate every time), or a
 * year's `immutable` for content-hashed names when `longCache` allows it (never for HTML, which
 * names the other files).
 */
export function sendClientFile(
  ctx: Context,
  file: { path: string; body: Buffer; etag: string },
  longCache: boolean,
): void {
  if (!answerClientFileHead(ctx, file, longCache)) ctx.body = file.body;
}

/**
 * Sets the status and headers of {@link sendClientFile}'s answer; true when that is the whole
 * answer, a `304` (the browser has the file), so the file's bytes need not be read.
 */
export function answerClientFileHead(
  ctx: Context,
  file: { path: string; etag: string },
  longCache: boolean,
): boolean {
  const type = lookup(file.path) || "application/octet-stream";
  ctx.status = 200;
  ctx.type = type;
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set(
    "Cache-Control",
    longCache && type !== "text/html" && isContentHashedName(file.path) ? IMMUTABLE : "no-cache",
  );
  ctx.etag = file.etag;
  if (!ctx.fresh) return false;
  ctx.status = 304;
  return true;
}

/**
 * The stored paths a request path may name, in order: `/` and `/dir/` are `index.html` there, and
 * `/dir` is the file `dir`, else `dir/index.html` (as `platform dev` serves folders). The path is
 * percent-decoded (malformed escapes were refused before routing); nothing is listed.
 */
export function clientPathsFor(requestPath: string): string[] {
  const relative = decodeURIComponent(requestPath).replace(/^\/+/, "");
  if (relative === "" || relative.endsWith("/")) return [`${relative}index.html`];
  return [relative, `${relative}/index.html`];
}
