import Router from "@koa/router";
import Koa from "koa";
import type { HostMetrics } from "../metrics/index.js";
import { errorEnvelope } from "./errors.js";
import { sendMetrics } from "./metrics.js";
import { listen, type RunningServer } from "./server.js";

/**
 * `platform host --metrics-port`: `GET /metrics` without a token on a second port, bound to
 * loopback only, for a Prometheus agent on the same machine that should not hold the operator
 * token. Anything else there is `404 not_found` in the usual envelope.
 */
export function listenForMetrics(
  metrics: HostMetrics,
  port: number,
  onInternalError: (error: unknown) => void,
): Promise<RunningServer> {
  const app = new Koa();
  const router = new Router();
  router.get("/metrics", (ctx) => sendMetrics(ctx, metrics));
  app.use(errorEnvelope(onInternalError));
  app.use(router.routes());
  return listen(app, port, "127.0.0.1");
}
