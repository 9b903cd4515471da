import { validateHeaderName, validateHeaderValue } from "node:http";
import { checkEndpointHeaderSize } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { ownOriginCookie } from "./endpoint-cookies.js";

/**
 * Response headers a capsule's endpoint may not set, dropped from its answer: framing and
 * hop-by-hop headers are the platform's (`date` and `content-encoding` included: the body is the
 * platform's to frame); `clear-site-data` reaches past the deployment's own origin (its `cookies`
 * clears the cookies of the whole site, other tenants' and the dashboard's); and the internal
 * redirects of the proxies in front of the host (nginx's `x-accel-*`, `x-sendfile` and lighttpd's,
 * Perlbal's `x-reproxy-url`) would let a tenant make the proxy serve what the proxy can reach.
 */
const RESERVED = new Set([
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "host",
  "te",
  "trailer",
  "date",
  "content-encoding",
  "alt-svc",
  "clear-site-data",
  "x-sendfile",
  "x-sendfile-type",
  "x-lighttpd-send-file",
  "x-lighttpd-sendfile",
  "x-reproxy-url",
]);

/**
 * Prefixes of reserved header names: the proxy's own (`proxy-connection`, `proxy-authenticate`,
 * nginx's `x-accel-*`, Envoy's `x-envoy-*`, whose `x-envoy-immediate-health-check-fail` would
 * take the whole host out of an Envoy's rotation, LiteSpeed's `x-litespeed-*`: an internal
 * redirect, and purges of the whole site's cache, other tenants' pages included).
 */
const RESERVED_PREFIXES = ["proxy-", "x-accel-", "x-envoy-", "x-litespeed-"];

/** Whether a capsule's endpoint may set response header `lower` (a lower-case name). */
export function isReservedHeader(lower: string): boolean {
  return RESERVED.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/**
 * The headers of endpoint `endpoint`'s answer the platform sends: reserved ones and non-strings
 * dropped, values with CR or LF dropped (they would start another header), cookies kept to the
 * deployment's own origin. A name or value HTTP does not allow fails the call as the handler's
 * error, naming the header, instead of failing inside the HTTP server.
 */
export function endpointHeaders(headers: unknown, endpoint: string): Array<[string, string]> {
  const entries = checkEndpointHeaderSize(headers, endpoint);
  return entries.flatMap(([name, value]): [string, string][] => {
    const lower = name.toLowerCase();
    if (typeof value !== "string" || isReservedHeader(lower) || /[\r\n]/.test(value)) return [];
    try {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    } catch {
      throw new PlatformError(
        "handler_error",
        `Endpoint ${endpoint} returned a header HTTP does not allow: ${JSON.stringify(name)}. Names are letters, digits and !#$%&'*+-.^_\`|~; values are text without control characters.`,
      );
    }
    return [[name, lower === "set-cookie" ? ownOriginCookie(value, endpoint) : value]];
  });
}
