import type { Middleware } from "koa";
import { isPlatformError } from "../../sdk/values/index.js";

/** Writes an error envelope `{ error: { code, message } }` with `status`. */
export function sendError(
  ctx: Parameters<Middleware>[0],
  status: number,
  code: string,
  message: string,
): void {
  ctx.status = status;
  ctx.type = "application/json";
  ctx.body = JSON.stringify({ error: { code, message } });
}

/**
 * The 404 of a request no route answered; an app's path asked of the control plane says where apps
 * answer (each at its own host name).
 */
function noRoute(ctx: Parameters<Middleware>[0]): string {
  const route = `No route for ${ctx.method} ${ctx.path}`;
  if (ctx.state.origin === "control" && /^\/(?:api|__platform)\//.test(ctx.path))
    return `${route}: this is the host's control plane; each app answers at its own host name, ${ctx.protocol}://<deployment id>.${ctx.host}${ctx.path}.`;
  return `${route}.`;
}

/**
 * The one error sink: platform errors become the envelope with their status; anything else is a
 * 500 `internal` whose details go to the host log, never to the caller.
 */
export function errorEnvelope(onInternal: (error: unknown) => void): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) sendError(ctx, 404, "not_found", noRoute(ctx));
    } catch (error) {
      if (isPlatformError(error)) {
        sendError(ctx, error.status, error.code, error.expose ? error.message : "Internal error.");
        if (error.retryAfterSeconds !== undefined) ctx.set("Retry-After", String(error.retryAfterSeconds));
        if (!error.expose) onInternal(error);
        return;
      }
      onInternal(error);
      sendError(ctx, 500, "internal", "Internal error.");
    }
  };
}
