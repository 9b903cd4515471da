import type { Context, Middleware } from "koa";
import type { AuthService } from "../auth/index.js";

/**
 * Identity as middleware: `ctx.state.identity` becomes the caller behind the token `tokenOf` finds
 * (an invalid token is refused, never treated as anonymous), or null without a token, and
 * `ctx.state.session` the proof of its session that a writing call checks again in its transaction. Routes differ
 * only in where the token travels, so each passes its reader from `credentials.ts`. Anonymous calls
 * take no extra promise turn.
 */
export function identify(auth: AuthService, tokenOf: (ctx: Context) => string | undefined): Middleware {
  return (ctx, next) => {
    const token = tokenOf(ctx);
    if (!token) {
      ctx.state.identity = null;
      ctx.state.session = null;
      return next();
    }
    return auth.authenticateCaller(ctx.state.deployment as string, token).then((caller) => {
      ctx.state.identity = caller.identity;
      ctx.state.session = caller.session;
      return next();
    });
  };
}
