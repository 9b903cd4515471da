import type { Context, Middleware } from "koa";
import type { AuthService } from "../auth/index.js";

/**
 * Identity as middleware: `ctx.state.identity` becomes the caller behind the token `tokenOf` finds
 * (an invalid token is refused, never treated as anonymous), or null without a token. Routes differ
 * only in where the token travels, so each passes its reader from `credentials.ts`. Anonymous calls
 * take no extra promise turn.
 */
export function identify(auth: AuthService, tokenOf: (ctx: Context) => string | undefined): Middleware {
  return (ctx, next) => {
    const token = tokenOf(ctx);
    if (!token) {
      ctx.state.identity = null;
      return next();
    }
    return auth.authenticate(ctx.state.deployment as string, token).then((identity) => {
      ctx.state.identity = identity;
      return next();
    });
  };
}
