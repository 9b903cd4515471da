import { PlatformError } from "../../sdk/values/index.js";

/**
 * Refuses a request path whose percent-escapes do not decode (`%ZZ`, a cut `%A`, bytes that are not
 * UTF-8) before any route decodes it: `400 invalid_request` on storage routes (the storage error
 * table's code for a malformed request), `400 bad_request` everywhere else. Paths without `%` cost
 * one scan.
 */
export function checkPathEscapes(path: string): void {
  if (!path.includes("%")) return;
  try {
    decodeURIComponent(path);
  } catch {
    throw new PlatformError(
      path.startsWith("/storage/") ? "invalid_request" : "bad_request",
      `The path ${JSON.stringify(path)} has a malformed percent-escape: each % must start a %XX escape of UTF-8 bytes (write a literal % as %25).`,
    );
  }
}
