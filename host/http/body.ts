import type { Context } from "koa";
import { PlatformError } from "../../sdk/values/index.js";

function tooLarge(limit: number): PlatformError {
  return new PlatformError("too_large", `The request body is larger than ${limit} bytes.`);
}

/**
 * Reads the request body while it streams, keeping at most `limit + 1` bytes: a declared
 * Content-Length over the limit is refused before reading, and a body that grows past the limit
 * stops being read at once (`413 too_large`).
 */
export function readBody(ctx: Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get("content-length") || 0);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  const req = ctx.req;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      const room = limit + 1 - size;
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      size += Math.min(chunk.length, room);
      if (size > limit) {
        cleanup();
        // Discard the rest without keeping it, so the client can still read the 413.
        req.resume();
        reject(tooLarge(limit));
      }
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = () => {
      cleanup();
      reject(new PlatformError("bad_request", "The request body could not be read."));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

/** Reads a JSON body (empty means `fallback`), as text, checking that it parses. */
export async function readJsonText(ctx: Context, limit: number, fallback: string): Promise<string> {
  const body = await readBody(ctx, limit);
  if (body.length === 0) return fallback;
  const text = body.toString("utf8");
  try {
    JSON.parse(text);
  } catch {
    throw new PlatformError("bad_request", "The request body must be JSON.");
  }
  return text;
}
