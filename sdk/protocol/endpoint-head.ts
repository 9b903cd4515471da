/**
 * What a custom endpoint's answer may say in its head: its status and the headers the platform
 * sends. The runtime applies these rules before the handler's transaction ends (a mutation's
 * writes roll back when its answer breaks them), and the host again on what the isolate handed
 * it, which the capsule can change. Pure JavaScript: it runs in the isolate too.
 */
import { PlatformError } from "../values/index.js";
import { LIMITS } from "./limits.js";

/** The dashboard's session cookie: an endpoint's cookies never take its name. */
export const PLATFORM_SESSION_COOKIE = "platform_session";

/** An endpoint answer's head as the platform sends it. */
export interface EndpointHead {
  status: number;
  headers: Array<[string, string]>;
}

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

/** Types of values JSON leaves out of an object. */
const LEFT_OUT_OF_JSON = new Set(["undefined", "function", "symbol"]);

/** A header name HTTP allows (a token), as Node's HTTP server checks it. */
const HEADER_NAME = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
/** A character a header value may not hold, as Node's HTTP server checks it. */
const VALUE_FORBIDDEN = /[^\t\x20-\x7e\x80-\xff]/;

/** Cookie names only the platform sets, compared in lower case. */
const PLATFORM_COOKIES = new Set([PLATFORM_SESSION_COOKIE.toLowerCase()]);
/** Cookie name prefixes browsers give meaning to; a prefixed platform name is still the platform's. */
const NAME_PREFIX = /^__(?:host|secure)-/;

/** A `Set-Cookie` attribute's name (`Domain`, `Path`...), trimmed and in lower case. */
function attributeName(attribute: string): string {
  const equals = attribute.indexOf("=");
  return (equals < 0 ? attribute : attribute.slice(0, equals)).trim().toLowerCase();
}

/**
 * The `Set-Cookie` value a capsule's endpoint may send, read the way browsers parse it: the cookie
 * keeps every attribute but `Domain`, so it stays on the deployment's own host and never reaches
 * the control plane or a sibling deployment. A cookie without a name, or named like a platform
 * cookie (also behind `__Host-`/`__Secure-`), fails the call with `handler_error`.
 */
function ownOriginCookie(value: string, endpoint: string): string {
  const parts = value.split(";");
  const pair = parts[0] as string;
  const equals = pair.indexOf("=");
  const name = equals < 0 ? "" : pair.slice(0, equals).trim();
  if (name === "" || PLATFORM_COOKIES.has(name.toLowerCase().replace(NAME_PREFIX, ""))) {
    throw new PlatformError(
      "handler_error",
      `Endpoint ${endpoint} sent Set-Cookie ${JSON.stringify(pair.slice(0, 64))}: a cookie needs a name of its own, and ${PLATFORM_SESSION_COOKIE} (with or without a __Host-/__Secure- prefix) belongs to the platform. Rename the cookie.`,
    );
  }
  return parts.filter((part, index) => index === 0 || attributeName(part) !== "domain").join(";");
}

/**
 * The entries of an endpoint answer's `headers` (absent, or an object of names to values), once
 * their number and their characters (names and string values) are within the limits; else the
 * handler's error, naming what is wrong.
 */
function headerEntries(headers: unknown, endpoint: string): Array<[string, unknown]> {
  if (headers === undefined || headers === null) return [];
  if (typeof headers !== "object" || Array.isArray(headers))
    throw new PlatformError(
      "handler_error",
      `Endpoint ${endpoint} returned headers that are not an object of names to text values.`,
    );
  // As JSON would have them: values it leaves out (undefined, functions, symbols) are not headers.
  const entries = Object.entries(headers).filter(([, value]) => !LEFT_OUT_OF_JSON.has(typeof value));
  // Each header costs the host's main thread to check, set and write; proxies refuse far fewer.
  if (entries.length > LIMITS.endpointResponseHeaders)
    throw new PlatformError(
      "handler_error",
      `Endpoint ${endpoint} returned ${entries.length} headers; an answer has at most ${LIMITS.endpointResponseHeaders}.`,
    );
  let chars = 0;
  for (const [name, value] of entries) chars += name.length + (typeof value === "string" ? value.length : 0);
  if (chars > LIMITS.endpointResponseHeaderChars)
    throw new PlatformError(
      "handler_error",
      `Endpoint ${endpoint} returned ${chars} characters of headers; an answer has at most ${LIMITS.endpointResponseHeaderChars}, names and values together.`,
    );
  return entries;
}

/** A status as an error names it: never the whole of a long value. */
function shownStatus(status: unknown): string {
  if (typeof status === "number" || status === null || status === undefined) return String(status);
  return typeof status === "string" ? JSON.stringify(status.slice(0, 64)) : `of type ${typeof status}`;
}

/**
 * The head of endpoint `endpoint`'s answer the platform sends: a status from 200 to 599, and its
 * headers with reserved ones and non-strings dropped, values with CR or LF dropped (they would
 * start another header), cookies kept to the deployment's own origin. Anything else fails the
 * call as the handler's error, naming what is wrong, instead of failing inside the HTTP server.
 */
export function endpointHead(status: unknown, headers: unknown, endpoint: string): EndpointHead {
  if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 599)
    throw new PlatformError(
      "handler_error",
      `Endpoint ${endpoint} returned an invalid status ${shownStatus(status)}; a status is a whole number from 200 to 599.`,
    );
  const sent = headerEntries(headers, endpoint).flatMap(([name, value]): Array<[string, string]> => {
    const lower = name.toLowerCase();
    if (typeof value !== "string" || isReservedHeader(lower) || /[\r\n]/.test(value)) return [];
    if (!HEADER_NAME.test(name) || VALUE_FORBIDDEN.test(value))
      throw new PlatformError(
        "handler_error",
        `Endpoint ${endpoint} returned a header HTTP does not allow: ${JSON.stringify(name.slice(0, 64))}. Names are letters, digits and !#$%&'*+-.^_\`|~; values are text without control characters.`,
      );
    return [[name, lower === "set-cookie" ? ownOriginCookie(value, endpoint) : value]];
  });
  return { status, headers: sent };
}
