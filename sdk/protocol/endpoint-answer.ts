/**
 * How a custom endpoint's answer leaves the isolate: the JSON of its head (`{ status, headers }`),
 * a line feed, then its body exactly as the handler built it. The body is never JSON-encoded: the
 * host's main thread would otherwise parse every answer whole (8 Mi characters of control
 * characters as JSON are six times that), where it now parses the head alone. JSON text never
 * holds a raw line feed, so the first one ends the head.
 */
import { LIMITS } from "./limits.js";

/**
 * The longest head an answer within the header rules can have (endpoint-head.ts): names are
 * tokens, and a value's characters JSON escapes (`"`, `\`, tab) take two; then each header's
 * quotes, colon and comma, and the status.
 */
export const ENDPOINT_HEAD_CHARS =
  2 * LIMITS.endpointResponseHeaderChars + 6 * LIMITS.endpointResponseHeaders + 64;

/** An endpoint answer's head and body, as the host reads it. */
export interface EndpointAnswer {
  /** The head's JSON text: `{ "status": …, "headers": … }`. */
  head: string;
  body: string;
}

/** The text of an endpoint's answer, from its head's JSON and its body. */
export function encodeEndpointAnswer(headJson: string, body: string): string {
  return `${headJson}\n${body}`;
}

/**
 * Splits an endpoint's answer into head and body (the body is a slice: nothing is copied or
 * parsed). Undefined when no line feed ends a head within {@link ENDPOINT_HEAD_CHARS}: the capsule
 * (which can change what the runtime calls) answered something else.
 */
export function splitEndpointAnswer(text: string): EndpointAnswer | undefined {
  const end = text.slice(0, ENDPOINT_HEAD_CHARS + 1).indexOf("\n");
  if (end < 0) return undefined;
  return { head: text.slice(0, end), body: text.slice(end + 1) };
}
