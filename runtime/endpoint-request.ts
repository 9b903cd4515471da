/** The `req` object custom endpoint handlers receive, built from the host's JSON description. */
import type { BridgeHttpRequest } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Decodes base64 (isolates have no `atob` or `Buffer`). */
export function decodeBase64(text: string): Uint8Array {
  const clean = text.replace(/=+$/, "");
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let at = 0;
  for (const char of clean) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) continue;
    value = (value << 6) | digit;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[at++] = (value >> bits) & 0xff;
    }
  }
  return out.subarray(0, at);
}

function reader(entries: Array<[string, string]>, caseInsensitive: boolean) {
  const map = new Map<string, string>();
  for (const [name, value] of entries) {
    const key = caseInsensitive ? name.toLowerCase() : name;
    if (!map.has(key)) map.set(key, value);
  }
  return Object.freeze({
    get: (name: string) => map.get(caseInsensitive ? String(name).toLowerCase() : String(name)) ?? null,
  });
}

/** Builds `req` with `headers.get`, `query.get` (absent gives null) and body readers. */
export function createEndpointRequest(request: BridgeHttpRequest & { bodyText: string }) {
  return Object.freeze({
    method: request.method,
    path: request.path,
    headers: reader(request.headers, true),
    query: reader(request.query, false),
    text: async () => request.bodyText,
    json: async () => {
      try {
        return JSON.parse(request.bodyText) as unknown;
      } catch {
        throw new PlatformError("bad_request", "The request body is not valid JSON.");
      }
    },
    bytes: async () => decodeBase64(request.bodyBase64),
  });
}
