import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { checkOperator } from "../access/index.js";
import type { Developers } from "../auth/index.js";
import type { HostMetrics } from "../metrics/index.js";
import { type Principal, resolvePrincipal } from "./principal.js";
import { ownPaths } from "./routing.js";
import type { TokenGuesses } from "./token-guesses.js";

/** Answers with every metric of `metrics`, levels read now. */
export async function sendMetrics(ctx: Context, metrics: HostMetrics): Promise<void> {
  const text = await metrics.text();
  ctx.status = 200;
  ctx.type = metrics.contentType;
  ctx.set("Cache-Control", "no-store");
  ctx.body = text;
}

/**
 * `GET /metrics` on the control plane, in Prometheus' text format, for the operator only: the
 * series name every deployment and storage owner of the host, which developers must not read of
 * each other. Credentials as on `/v1` (no token: 401, a developer's or an unknown one: 403).
 */
export function metricsRoutes(
  metrics: HostMetrics,
  adminToken: string,
  developers: Developers,
  guesses: TokenGuesses,
): RouterMiddleware {
  const router = new Router();
  router.get("/metrics", resolvePrincipal(adminToken, developers, guesses), async (ctx) => {
    checkOperator(ctx.state.principal as Principal);
    await sendMetrics(ctx, metrics);
  });
  return ownPaths((path) => path === "/metrics", router.routes());
}
