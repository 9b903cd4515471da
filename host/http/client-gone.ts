import type Koa from "koa";

/**
 * Codes of a request or response that ended because the client went away (closed, reset, timed
 * out; `HPE_INVALID_EOF_STATE`: closed in the middle of its request's body).
 */
const GONE = new Set([
  "ERR_STREAM_PREMATURE_CLOSE",
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
  "HPE_INVALID_EOF_STATE",
]);

/**
 * Koa's last resort for errors after a response started (a streamed export, backup or log follow):
 * a client that hangs up mid-stream is not the host's failure and is not logged; anything else goes
 * to `report` (by default Koa prints the stack).
 */
export function reportStreamErrors(app: Koa, report: (error: unknown) => void): void {
  app.on("error", (error: NodeJS.ErrnoException, ctx?: Koa.Context) => {
    if (GONE.has(error?.code ?? "") || ctx?.req.destroyed) return;
    if ((error as { status?: number }).status === 404 || (error as { expose?: boolean }).expose) return;
    report(error);
  });
}
