import type { RouterMiddleware } from "@koa/router";
import type { Middleware } from "koa";

/** The `next` of a route that ends the request: nothing after it runs. */
export const settled = (): Promise<void> => Promise.resolve();

/**
 * Gives `handle` every request whose path `owns` accepts, and only those: a path it does not know
 * ends there as `404 not_found` (the error sink's answer) instead of reaching later routes, so a
 * typo under `/api/` or `/v1/` never runs a capsule's endpoint or a static file. Other paths go on.
 */
export function ownPaths(owns: (path: string) => boolean, handle: RouterMiddleware): RouterMiddleware {
  return (ctx, next) => (owns(ctx.path) ? handle(ctx, settled) : next());
}

/**
 * Gives `handle` the requests whose path starts with `prefix`; the others go on without it. For a
 * route file whose unknown paths must go on too (the dev server's tools): a router costs every
 * request that reaches it a few microseconds even when nothing matches.
 */
export function onlyUnder(prefix: string, handle: RouterMiddleware): RouterMiddleware {
  return (ctx, next) => (ctx.path.startsWith(prefix) ? handle(ctx, next) : next());
}

/** `owns` for a route file whose paths all start with `prefix`. */
export function under(prefix: string): (path: string) => boolean {
  return (path) => path.startsWith(prefix);
}

/**
 * Runs `steps` in order as one middleware, each step's `next` being the following one and the last
 * step's the caller's: a route assembled from middleware outside a router (the endpoints, whose
 * paths the capsule declares).
 */
export function series(steps: readonly Middleware[]): Middleware {
  return (ctx, next) => {
    const run = (index: number): Promise<unknown> => {
      const step = steps[index];
      return step ? Promise.resolve(step(ctx, () => run(index + 1))) : next();
    };
    return run(0);
  };
}
