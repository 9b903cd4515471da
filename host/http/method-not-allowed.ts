import type { Middleware } from "koa";
import { PlatformError } from "../../sdk/values/index.js";

/**
 * The answer of a route to a method it does not take: `405 method_not_allowed` with `Allow`, and
 * a message naming the method to use. Registered after the route's own method on the same path,
 * so a browser's `GET /api/query/list` tells its author to send a `POST` instead of a 404 that
 * suggests the query does not exist. `what` names the target for the message (`query list`).
 */
export function methodNotAllowed(
  allowed: "POST",
  what: (params: Record<string, string>) => string,
): Middleware {
  return (ctx) => {
    ctx.set("Allow", allowed);
    const params = (ctx as { params?: Record<string, string> }).params ?? {};
    throw new PlatformError(
      "method_not_allowed",
      `${ctx.method} is not allowed here: call ${what(params)} with ${allowed} ${ctx.path} and its JSON arguments as the body.`,
    );
  };
}
