import { PassThrough } from "node:stream";
import type { Context } from "koa";
import type { LogHub } from "../deployments/index.js";

/**
 * Answers with a deployment's kept log lines as NDJSON; with `?follow=1` the response stays open
 * and carries new lines as they are written, until the client goes away.
 */
export function streamLogs(ctx: Context, hub: LogHub, deployment: string): void {
  const stream = new PassThrough();
  ctx.type = "application/x-ndjson";
  ctx.set("Cache-Control", "no-store");
  ctx.body = stream;
  for (const line of hub.recent(deployment)) stream.write(`${JSON.stringify(line)}\n`);
  if (ctx.query.follow !== "1" && ctx.query.follow !== "true") {
    stream.end();
    return;
  }
  const stop = hub.follow(deployment, (line) => stream.write(`${JSON.stringify(line)}\n`));
  ctx.req.on("close", () => {
    stop();
    stream.end();
  });
}
