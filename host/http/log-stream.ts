import { Readable } from "node:stream";
import Router, { type RouterMiddleware } from "@koa/router";
import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { LogHub, LogLine } from "../deployments/index.js";
import { onlyUnder } from "./routing.js";

/** Lines as NDJSON, made once for every stream that sends them (8 followers encoded each line 8 times). */
const encodedLines = new WeakMap<LogLine, string>();

/** One line of a log stream (NDJSON). */
function ndjson(line: LogLine): string {
  let text = encodedLines.get(line);
  if (text === undefined) {
    text = `${JSON.stringify(line)}\n`;
    encodedLines.set(line, text);
  }
  return text;
}

/** Log streams open now, by whose they are (see {@link streamLogs}). */
const openStreams = new Map<string, number>();

/**
 * Answers with a deployment's kept log lines as NDJSON; with `?follow=1` the response stays open
 * and carries new lines as they are written, until the client goes away, the deployment is
 * deleted, or `stillAllowed` (asked every {@link LIMITS.logFollowRecheckMs}) says the caller's
 * credential ended (a replaced token, a signed-out session).
 *
 * Paced by its client: the kept lines are written as it reads them, never copied whole into a
 * buffer of the stream's own, and a follower whose unread lines pass
 * {@link LIMITS.logFollowUnreadBytes} at two looks in a row (or 16 times that at once) is ended after
 * them, with a last line saying why (100 unread streams of a deployment
 * whose log held 24 MB of escaped JSON took the host from 0.3 to 3.4 GB). `owner` (a developer's
 * id) may have {@link LIMITS.logStreamsPerCaller} streams open at once; more are refused.
 */
export function streamLogs(
  ctx: Context,
  hub: LogHub,
  deployment: string,
  stillAllowed: () => Promise<boolean> = async () => true,
  owner = `deployment:${deployment}`,
): void {
  const open = openStreams.get(owner) ?? 0;
  if (open >= LIMITS.logStreamsPerCaller)
    throw new PlatformError(
      "limit_exceeded",
      `At most ${LIMITS.logStreamsPerCaller} log streams may be open at once; close one (a \`platform logs --follow\` or a dashboard tab showing logs).`,
      { retryAfterSeconds: 1 },
    );
  openStreams.set(owner, open + 1);
  const follow = ctx.query.follow === "1" || ctx.query.follow === "true";
  const kept = hub.recent(deployment)[Symbol.iterator]();
  let dumped = false;
  /** Lines written while the kept ones are still being read. */
  const arrived: string[] = [];
  let arrivedBytes = 0;
  let ended = false;
  const stream = new Readable({
    read() {
      if (!dumped) {
        for (let next = kept.next(); !next.done; next = kept.next())
          if (!this.push(ndjson(next.value))) return;
        dumped = true;
        for (const line of arrived.splice(0)) this.push(line);
        arrivedBytes = 0;
        if (!follow || ended) this.push(null);
      }
    },
  });
  ctx.type = "application/x-ndjson";
  ctx.set("Cache-Control", "no-store");
  ctx.body = stream;
  /** Sends `text` after the kept lines: now when they are all taken, else once they are. */
  const send = (text: string) => {
    if (dumped) stream.push(text);
    else {
      arrived.push(text);
      arrivedBytes += Buffer.byteLength(text);
    }
  };
  const stopFollowing = follow
    ? hub.follow(
        deployment,
        (line) => {
          send(ndjson(line));
          // Far past the share at once: ended now; past it, only if still past it a look later
          // (one call's lines come in one burst, which a client reading at once takes in turns).
          if (unread() > LIMITS.logFollowUnreadBytes * 16) slow();
        },
        () => end(),
      )
    : () => {};
  const unread = () => stream.readableLength + arrivedBytes;
  const recheck = follow
    ? setInterval(() => {
        stillAllowed().then(
          (allowed) => allowed || end(),
          () => {},
        );
      }, LIMITS.logFollowRecheckMs)
    : undefined;
  let pastShare = false;
  const look = follow
    ? setInterval(() => {
        const over = unread() > LIMITS.logFollowUnreadBytes;
        if (over && pastShare) slow();
        pastShare = over;
      }, LIMITS.logFollowLookMs)
    : undefined;
  /** Ends a follower that reads too slowly, saying so in a last line (`platform logs` prints it). */
  function slow(): void {
    if (ended) return;
    const notice: LogLine = {
      time: new Date().toISOString(),
      level: "warn",
      deployment,
      handler: "platform",
      platform: true,
      requestId: "",
      message:
        "The host stopped following these logs: new lines waited unread past their share (this client read too slowly). Follow again to go on.",
    };
    send(ndjson(notice));
    end();
  }
  /** Stops following; the lines already taken are still sent. */
  function end(): void {
    if (ended) return;
    ended = true;
    clearInterval(recheck);
    clearInterval(look);
    stopFollowing();
    if (dumped) stream.push(null);
  }
  let closed = false;
  const close = () => {
    end();
    if (closed) return;
    closed = true;
    const left = (openStreams.get(owner) ?? 1) - 1;
    if (left > 0) openStreams.set(owner, left);
    else openStreams.delete(owner);
  };
  ctx.req.on("close", close);
  stream.on("close", close);
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
