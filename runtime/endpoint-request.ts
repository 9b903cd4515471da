/** The `req` object custom endpoint handlers receive, built from the host's JSON description. */
import type { BridgeHttpRequest } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";
import { decodeBase64, decodeUtf8 } from "./body-decoding.js";

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

/**
 * Builds `req` with `headers.get`, `query.get` (absent gives null) and body readers. The body is
 * decoded when a reader first asks for it, once; `bytes()` hands out a copy each time.
 */
export function createEndpointRequest(request: BridgeHttpRequest) {
  let bytes: Uint8Array | undefined;
  let text: string | undefined;
  const bodyBytes = (): Uint8Array => {
    bytes ??= decodeBase64(request.bodyBase64);
    return bytes;
  };
  const bodyText = (): string => {
    text ??= decodeUtf8(bodyBytes());
    return text;
  };
  return Object.freeze({
    method: request.method,
    path: request.path,
    headers: reader(request.headers, true),
    query: reader(request.query, false),
    text: async () => bodyText(),
    json: async () => {
      try {
        return JSON.parse(bodyText()) as unknown;
      } catch {
        throw new PlatformError("bad_request", "The request body is not valid JSON.");
      }
    },
    bytes: async () => bodyBytes().slice(),
  });
}
