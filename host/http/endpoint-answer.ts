import { LIMITS, splitEndpointAnswer } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { checkJsonShape } from "../json-shape.js";

/** What the host reads of an endpoint answer's head; the status and headers are checked after. */
export interface EndpointHead {
  status?: unknown;
  headers?: unknown;
}

/**
 * The head of endpoint `name`'s answer, read from `answer` (encodeEndpointAnswer's text), and its
 * body as the handler built it. Only the head is parsed: its length is bounded, so an answer of any
 * size costs the main thread about the same. A text the runtime could not have made (the capsule
 * can change what it calls) fails the call as the handler's error.
 */
export function readEndpointAnswer(answer: string, name: string): { head: EndpointHead; body: string } {
  const parts = splitEndpointAnswer(answer);
  if (parts === undefined)
    throw new PlatformError(
      "handler_error",
      `Endpoint ${name} answered something other than json(...) or text(...), or headers far past ${LIMITS.endpointResponseHeaderChars} characters.`,
    );
  checkJsonShape(
    parts.head,
    `Endpoint ${name}'s answer`,
    LIMITS.syscallContainers,
    LIMITS.jsonMembers,
    "handler_error",
  );
  let head: unknown;
  try {
    head = JSON.parse(parts.head);
  } catch {
    head = undefined;
  }
  if (typeof head !== "object" || head === null || Array.isArray(head))
    throw new PlatformError("handler_error", `Endpoint ${name} answered a head that is not a JSON object.`);
  return { head, body: parts.body };
}
