import { PlatformError } from "../../sdk/values/index.js";
import { SESSION_COOKIE } from "./dashboard-sessions.js";

/** Cookie names only the platform sets, compared in lower case. */
const PLATFORM_COOKIES = new Set([SESSION_COOKIE.toLowerCase()]);
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
export function ownOriginCookie(value: string, endpoint: string): string {
  const parts = value.split(";");
  const pair = parts[0] as string;
  const equals = pair.indexOf("=");
  const name = equals < 0 ? "" : pair.slice(0, equals).trim();
  if (name === "" || PLATFORM_COOKIES.has(name.toLowerCase().replace(NAME_PREFIX, ""))) {
    throw new PlatformError(
      "handler_error",
      `Endpoint ${endpoint} sent Set-Cookie ${JSON.stringify(pair.slice(0, 64))}: a cookie needs a name of its own, and ${SESSION_COOKIE} (with or without a __Host-/__Secure- prefix) belongs to the platform. Rename the cookie.`,
    );
  }
  return parts.filter((part, index) => index === 0 || attributeName(part) !== "domain").join(";");
}
