import {
  type EndpointHead,
  endpointHead,
  LIMITS,
  PlatformError,
  splitEndpointAnswer,
} from "../../sdk/protocol/index.js";
import { charsOutsideStringsMoreThan, containersMoreThan, membersMoreThan } from "../json-shape.js";

/** Objects in a head the runtime makes: the head, its headers (and never an array). */
const HEAD_OBJECTS = 2;
/** Members of such a head: status, headers and each header. */
const HEAD_MEMBERS = LIMITS.endpointResponseHeaders + 2;

/**
 * The head of endpoint `name`'s answer as the platform sends it (see {@link endpointHead}), read
 * from `answer` (encodeEndpointAnswer's text), and its body as the handler built it. Only the
 * head is parsed, once its length and shape are what the runtime makes: an answer of any size
 * costs the main thread about the same. A text the runtime could not have made (the capsule can
 * change what it calls) fails the call as the handler's error.
 */
export function readEndpointAnswer(answer: string, name: string): { head: EndpointHead; body: string } {
  const parts = splitEndpointAnswer(answer);
  if (
    parts === undefined ||
    containersMoreThan(parts.head, HEAD_OBJECTS) ||
    charsOutsideStringsMoreThan(parts.head, 0, 91, 91) ||
    membersMoreThan(parts.head, HEAD_MEMBERS)
  )
    throw new PlatformError(
      "handler_error",
      `Endpoint ${name} answered something other than json(...) or text(...) from platform/server.`,
    );
  let head: unknown;
  try {
    head = JSON.parse(parts.head);
  } catch {
    head = undefined;
  }
  if (typeof head !== "object" || head === null || Array.isArray(head))
    throw new PlatformError("handler_error", `Endpoint ${name} answered a head that is not a JSON object.`);
  const { status, headers } = head as { status?: unknown; headers?: unknown };
  return { head: endpointHead(status, headers, name), body: parts.body };
}
