import type { Context } from "koa";
import getRawBody from "raw-body";
import { PlatformError } from "../../sdk/values/index.js";

/** Reads the request body, refusing more than `limit` bytes with `413 too_large`. */
export async function readBody(ctx: Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get("content-length") || 0);
  if (declared > limit)
    throw new PlatformError("too_large", `The request body is larger than ${limit} bytes.`);
  try {
    return await getRawBody(ctx.req, { limit });
  } catch (error) {
    if ((error as { type?: string }).type === "entity.too.large")
      throw new PlatformError("too_large", `The request body is larger than ${limit} bytes.`);
    throw new PlatformError("bad_request", "The request body could not be read.");
  }
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
