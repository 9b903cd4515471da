import { Stream } from "node:stream";
import type { Context, Middleware } from "koa";
import type { OwnerLimit } from "../db/kv/owner-limit.js";
import type { RequestQuota } from "./request-quota.js";

/**
 * The request quota as middleware for callers `keyOf` names (undefined: not counted): one request
 * before the route does any work, then one more per `LIMITS.answerBytesPerRequest` of its answer,
 * as `chargeRequest` does for an app's callers; each caller's requests run a few at a time
 * (`turns`), the rest waiting, so that the answers' bytes are charged before many more start. The
 * control plane counts each developer so (the operator is not counted): one developer's loop over
 * large data-browser pages held every tenant's calls on the host's main thread, and a thousand at
 * once were all admitted before the first answer's bytes were charged.
 */
export function chargeCaller(
  quota: RequestQuota,
  turns: OwnerLimit,
  keyOf: (ctx: Context) => string | undefined,
): Middleware {
  return async (ctx, next) => {
    const key = keyOf(ctx);
    if (key === undefined) return next();
    await turns.run(key, async () => {
      quota.charge(key);
      await next();
      quota.chargeAnswer(key, answerLength(ctx));
    });
  };
}

/**
 * The bytes of `ctx`'s answer (0 for a stream). An object body is written out here, once: its
 * length would otherwise be computed by stringifying it, and again when it is sent.
 */
function answerLength(ctx: Context): number {
  const body: unknown = ctx.body;
  if (body !== null && typeof body === "object" && !Buffer.isBuffer(body) && !(body instanceof Stream)) {
    ctx.body = JSON.stringify(body);
    ctx.type = "application/json";
  }
  const length = ctx.response.length;
  return typeof length === "number" ? length : 0;
}
