import type { Context, Middleware } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { bodyArrival } from "./body-arrivals.js";
import { checkJsonOffThread, parseJsonOffThread } from "./json-off-thread.js";
import { parseJsonText } from "./json-text.js";
import { principalStillLive } from "./principal.js";

/** Largest body of the small JSON and form requests: sign-in, the operator API, dashboard forms. */
export const SMALL_BODY_BYTES = 16 * 1024;

function tooLarge(limit: number): PlatformError {
  return new PlatformError("too_large", `The request body is larger than ${limit} bytes.`);
}

/**
 * A body with a declared length of over this many bytes goes, once half of it has arrived, into
 * one buffer of that length, and the rest is copied there as it arrives: joining a 60 MB body's
 * pieces at its end held every tenant's requests 30 ms. Each piece counts against the body
 * arrivals as it arrives. Not sooner than half: counting the declared length at once let a client
 * hold 512 MiB of every tenant's arrivals by sending 10 MiB, and a buffer made at the first MiB,
 * counted as sent, let 64 MiB sent reserve 3.8 GB, which V8 counts as memory in use and answered
 * with a storm of full collections on the main thread. So a body reserves at most twice what it
 * sent and was counted.
 */
const WHOLE_AFTER_BYTES = 1024 * 1024;

/**
 * Reads the request body while it streams, keeping at most `limit + 1` bytes: a declared
 * Content-Length over the limit is refused before reading, and a body that grows past the limit
 * stops being read at once (`413 too_large`). Its bytes count against the host's body arrivals
 * while it arrives (body-arrivals.ts): past those, it stops being read too.
 */
export function readBody(ctx: Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get("content-length") || 0);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  const req = ctx.req;
  const arrival = bodyArrival(ctx);
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    /** The buffer of the declared length the rest of a large body goes into (see WHOLE_AFTER_BYTES). */
    let whole: Buffer | undefined;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onError);
      arrival.end();
    };
    // Discards the rest without keeping it, so the client can still read the answer.
    const stop = (error: PlatformError) => {
      cleanup();
      req.resume();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      const room = limit + 1 - size;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      const refused = arrival.take(kept.length);
      if (refused) return stop(refused);
      if (whole) {
        // Node never passes on more than the declared length.
        if (size + kept.length > whole.length) return stop(tooLarge(limit));
        kept.copy(whole, size);
        size += kept.length;
        return;
      }
      chunks.push(kept);
      size += kept.length;
      if (size > limit) return stop(tooLarge(limit));
      if (declared > WHOLE_AFTER_BYTES && size >= declared / 2 && size < declared) {
        try {
          whole = Buffer.allocUnsafe(declared);
        } catch {
          return stop(
            new PlatformError(
              "unavailable",
              "The host is out of memory for this request body; retry later.",
              { retryAfterSeconds: 1 },
            ),
          );
        }
        let at = 0;
        for (const piece of chunks) at += piece.copy(whole, at);
        chunks = [];
      }
    };
    const onEnd = () => {
      cleanup();
      if (whole) resolve(size === whole.length ? whole : whole.subarray(0, size));
      else resolve(Buffer.concat(chunks, size));
    };
    // An error, or the connection closing before the body ended.
    const onError = () => {
      cleanup();
      reject(new PlatformError("bad_request", "The request body could not be read."));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onError);
  });
}

/** Reads a JSON body (empty means `fallback`), as text, checking that it parses. */
export async function readJsonText(ctx: Context, limit: number, fallback: string): Promise<string> {
  return checkedJsonText(await readBody(ctx, limit), fallback);
}

/**
 * `body` (a JSON body read already; empty means `fallback`) as text, checked to parse; with
 * `caller` (whose turn it takes), one over `LIMITS.jsonCheckedOffThreadBytes` off the main thread.
 */
async function checkedJsonText(body: Buffer, fallback: string, caller?: string): Promise<string> {
  const text = body.length === 0 ? fallback : body.toString("utf8");
  if (caller !== undefined && body.length > LIMITS.jsonCheckedOffThreadBytes)
    await checkJsonOffThread(body, caller);
  else parseJsonText(text);
  return text;
}

/**
 * Refuses (`401 unauthorized`) a request whose credential stopped speaking for its caller while its
 * body arrived (a developer token replaced, a dashboard session ended): its headers were accepted
 * before, and a body held back for minutes acted with a token the operator had replaced. Asked
 * again once a request holds its deployment's lock (deploy-guards.ts `stillSpokenFor`).
 */
export async function checkStillSpokenFor(ctx: Context): Promise<void> {
  if (!(await principalStillLive(ctx)))
    throw new PlatformError(
      "unauthorized",
      "The token or dashboard session this request was sent with was replaced or ended while the request waited; nothing was done. Send it again with a current one.",
    );
}

/**
 * Reads a JSON object body (empty means `{}`); anything else is `400 bad_request`. Parsed once: a
 * deploy body of 60 MB parsed twice held the host's main thread 240 ms. With `caller` (who sends
 * it), a body over `LIMITS.jsonParsedOffThreadBytes` is parsed off the main thread, in that
 * caller's turn (json-off-thread.ts); `decodeClient`: a deploy body, whose client files come back
 * decoded there.
 */
export async function readJsonObject(
  ctx: Context,
  limit: number,
  caller?: string,
  decodeClient = false,
): Promise<Record<string, unknown>> {
  const body = await readBody(ctx, limit);
  await checkStillSpokenFor(ctx);
  const value =
    caller !== undefined && body.length > LIMITS.jsonParsedOffThreadBytes
      ? await parseJsonOffThread(body, caller, decodeClient)
      : parseJsonText(body.length === 0 ? "{}" : body.toString("utf8"));
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new PlatformError("bad_request", "The body must be a JSON object.");
  return value as Record<string, unknown>;
}

/**
 * The body {@link rawBody} read (`ctx.state.body`) checked as JSON (empty means `fallback`) into
 * `ctx.state.jsonText`: read before its caller is known and charged, checked after, a large one off
 * the main thread in `callerOf(ctx)`'s turn.
 */
export function checkedJsonBody(fallback: string, callerOf: (ctx: Context) => string): Middleware {
  return async (ctx, next) => {
    ctx.state.jsonText = await checkedJsonText(ctx.state.body as Buffer, fallback, callerOf(ctx));
    return next();
  };
}

/** Body limit as middleware: the route's JSON object body (at most `limit` bytes) is `ctx.state.json`. */
export function jsonObjectBody(limit: number): Middleware {
  return async (ctx, next) => {
    ctx.state.json = await readJsonObject(ctx, limit);
    return next();
  };
}

/** Body limit as middleware: the route's raw body (at most `limit` bytes) is `ctx.state.body`. */
export function rawBody(limit: number): Middleware {
  return async (ctx, next) => {
    ctx.state.body = await readBody(ctx, limit);
    return next();
  };
}
