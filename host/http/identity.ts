import type { Context, Middleware } from "koa";
import type { AuthService } from "../auth/index.js";
import { quotaKey, type RequestQuota } from "./request-quota.js";

/**
 * Identity as middleware: `ctx.state.identity` becomes the caller behind the token `tokenOf` finds
 * (an invalid token is refused, never treated as anonymous), or null without a token, and
 * `ctx.state.session` the proof of its session that a writing call checks again in its transaction. Routes differ
 * only in where the token travels, so each passes its reader from `credentials.ts`. Anonymous calls
 * take no extra promise turn.
 */
export function identify(
  auth: AuthService,
  tokenOf: (ctx: Context) => string | undefined,
  quota: RequestQuota,
): Middleware {
  return (ctx, next) => {
    const token = tokenOf(ctx);
    if (!token) {
      ctx.state.identity = null;
      ctx.state.session = null;
      return next();
    }
    const deployment = ctx.state.deployment as string;
    return auth.authenticateCaller(deployment, token).then(
      (caller) => {
        ctx.state.identity = caller.identity;
        ctx.state.session = caller.session;
        return next();
      },
      (error: unknown) => {
        // A refused token costs its address a request, as an anonymous call would: checking it
        // took the host's time, and a flood of bad tokens is refused like any other.
        quota.charge(quotaKey(deployment, null, quota.clientAddress(ctx.req)));
        throw error;
      },
    );
  };
}
