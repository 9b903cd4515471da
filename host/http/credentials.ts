import type { Context } from "koa";
import { SYNC_TOKEN_PROTOCOL_PREFIX } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/**
 * The one reader of `Authorization: Bearer <token>`: `undefined` when the header is absent, `null`
 * when it is present but not a bearer token (an empty one included), else the token. Every route
 * that takes a bearer token reads it here, so the header is parsed one way; each caller decides
 * what a malformed header means. Only spaces and tabs around the token are dropped, as HTTP's own
 * parsing does: `String.prototype.trim` also dropped U+00A0, so `Bearer \u00a0` read as an empty token.
 */
export function bearerOf(header: string): string | null | undefined {
  if (!header) return undefined;
  if (!header.startsWith("Bearer ")) return null;
  const token = header.slice(7).replace(/^[ \t]+|[ \t]+$/g, "");
  return token === "" ? null : token;
}

/**
 * The bearer token of a data-plane request, if any. A malformed header is refused rather than
 * treated as anonymous, so a client bug never silently drops the caller's identity.
 */
export function bearerToken(ctx: Context): string | undefined {
  const token = bearerOf(ctx.get("authorization"));
  if (token === null) throw new PlatformError("unauthorized", "Authorization must be `Bearer <token>`.");
  return token;
}

/** Storage routes also take the token as `?platform_token=` (a plain link or image can carry it). */
export function storageToken(ctx: Context): string | undefined {
  const query = ctx.query.platform_token;
  return bearerToken(ctx) ?? (typeof query === "string" && query ? query : undefined);
}

/** The header that carries a custom endpoint's token; it is never passed on to the handler. */
export const ENDPOINT_TOKEN_HEADER = "x-platform-token";

/**
 * Custom endpoints take the token as `X-Platform-Token`: `Authorization` belongs to the capsule's
 * own protocol, which the handler reads as an ordinary header.
 */
export function endpointToken(ctx: Context): string {
  return ctx.get(ENDPOINT_TOKEN_HEADER);
}

/**
 * A WebSocket upgrade carries the token among its subprotocols, as `platform-token.<token>` beside
 * `platform.sync` (browsers cannot set an upgrade's other headers, and a URL's query is written to
 * proxies' access logs), or, from older clients, as `?platform_token=`; both at once are refused
 * (`bad_request`).
 */
export function syncToken(url: URL, offered: string | undefined): string | null {
  const inUrl = url.searchParams.get("platform_token");
  const inProtocols = (offered ?? "")
    .split(",")
    .map((protocol) => protocol.trim())
    .filter((protocol) => protocol.startsWith(SYNC_TOKEN_PROTOCOL_PREFIX));
  if (inProtocols.length === 0) return inUrl;
  if (inProtocols.length > 1 || inUrl !== null)
    throw new PlatformError("bad_request", "Send one token with a socket: in its subprotocols or its URL.");
  return (inProtocols[0] as string).slice(SYNC_TOKEN_PROTOCOL_PREFIX.length);
}
