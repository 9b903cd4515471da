import type Koa from "koa";
import compress from "koa-compress";

/**
 * What the control plane compresses: the dashboard's shell, script and stylesheet and the JSON of
 * the operator API. Never streams (NDJSON logs, deploy progress, backups: compressing them would
 * hold lines back until a block fills), archives and images (already compressed), nor stored files
 * (sent as stored, see `registerStorageRoutes`).
 */
const COMPRESSED_TYPES = new Set(["application/json", "text/html", "text/css", "text/javascript"]);

/**
 * Compression (brotli, else gzip) of the control plane's text answers over 1 KiB, as the browser
 * asks for it (`Accept-Encoding`): the dashboard's bundle is a few hundred KiB and a page of rows
 * JSON compresses several times over. Deployment origins are left as they are.
 */
export function controlPlaneCompression(): Koa.Middleware {
  const compressing = compress({
    filter: (type) => COMPRESSED_TYPES.has(type),
    threshold: 1024,
    deflate: false,
  });
  return (ctx, next) => (ctx.state.origin === "control" ? compressing(ctx, next) : next());
}
