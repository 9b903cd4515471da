import { PassThrough } from "node:stream";
import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { LogHub } from "../deployments/index.js";
import { onlyUnder } from "./routing.js";

/**
 * Answers with a deployment's kept log lines as NDJSON; with `?follow=1` the response stays open
 * and carries new lines as they are written, until the client goes away, the deployment is
 * deleted, or `stillAllowed` (asked every {@link LIMITS.logFollowRecheckMs}) says the caller's
 * credential ended (a replaced token, a signed-out session).
 */
export function streamLogs(
  ctx: Context,
  hub: LogHub,
  deployment: string,
  stillAllowed: () => Promise<boolean> = async () => true,
): void {
  const stream = new PassThrough();
  ctx.type = "application/x-ndjson";
  ctx.set("Cache-Control", "no-store");
  ctx.body = stream;
  for (const line of hub.recent(deployment)) stream.write(`${JSON.stringify(line)}\n`);
  if (ctx.query.follow !== "1" && ctx.query.follow !== "true") {
    stream.end();
    return;
  }
  const stop = hub.follow(
    deployment,
    (line) => stream.write(`${JSON.stringify(line)}\n`),
    () => stream.end(),
  );
  const recheck = setInterval(() => {
    stillAllowed().then(
      (allowed) => allowed || end(),
      () => {},
    );
  }, LIMITS.logFollowRecheckMs);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(recheck);
    stop();
    stream.end();
  };
  ctx.req.on("close", end);
  stream.on("close", end);
}

/**
 * `platform dev`'s `GET /__platform/logs` at the app origin (hosted deployments read logs through
 * the operator API). Other methods, HEAD included, go on to the endpoints and client files.
 */
export function devLogRoutes(hub: LogHub): RouterMiddleware {
  const router = new Router({ sensitive: true, strict: true });
  router.get("/__platform/logs", (ctx, next) => {
    // The router answers HEAD with GET routes; logs are GET only.
    if (ctx.method !== "GET") return next();
    streamLogs(ctx, hub, ctx.state.deployment as string);
  });
  return onlyUnder("/__platform/", router.routes());
}
