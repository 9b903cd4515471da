import type { Context, Middleware } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { checkJsonShape } from "../json-shape.js";
import { bodyArrival } from "./body-arrivals.js";

/** Largest body of the small JSON and form requests: sign-in, the operator API, dashboard forms. */
export const SMALL_BODY_BYTES = 16 * 1024;

function tooLarge(limit: number): PlatformError {
  return new PlatformError("too_large", `The request body is larger than ${limit} bytes.`);
}

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
    const chunks: Buffer[] = [];
    let size = 0;
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
      chunks.push(kept);
      size += kept.length;
      if (size > limit) stop(tooLarge(limit));
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
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

/** Reads a JSON body (empty means `fallback`): its text and its value, parsed once. */
async function readJsonBody(
  ctx: Context,
  limit: number,
  fallback: string,
): Promise<{ text: string; value: unknown }> {
  const body = await readBody(ctx, limit);
  if (body.length === 0) return { text: fallback, value: JSON.parse(fallback) };
  const text = body.toString("utf8");
  checkJsonShape(text, "The request body", LIMITS.jsonMembers, LIMITS.jsonMembers);
  try {
    return { text, value: JSON.parse(text) };
  } catch {
    throw new PlatformError("bad_request", "The request body must be JSON.");
  }
}

/** Reads a JSON body (empty means `fallback`), as text, checking that it parses. */
export async function readJsonText(ctx: Context, limit: number, fallback: string): Promise<string> {
  return (await readJsonBody(ctx, limit, fallback)).text;
}

/**
 * Reads a JSON object body (empty means `{}`); anything else is `400 bad_request`. Parsed once: a
 * deploy body of 60 MB parsed twice held the host's main thread 240 ms.
 */
export async function readJsonObject(ctx: Context, limit: number): Promise<Record<string, unknown>> {
  const { value } = await readJsonBody(ctx, limit, "{}");
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new PlatformError("bad_request", "The body must be a JSON object.");
  return value as Record<string, unknown>;
}

/**
 * Body limit as middleware: the route's JSON body, at most `limit` bytes and checked to parse, is
 * `ctx.state.jsonText` (empty means `fallback`) before the route runs.
 */
export function jsonTextBody(limit: number, fallback: string): Middleware {
  return async (ctx, next) => {
    ctx.state.jsonText = await readJsonText(ctx, limit, fallback);
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
