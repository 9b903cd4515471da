import {
  DISPATCH_ERROR_CHARS,
  type DispatchResponse,
  decodeDispatchResponse,
} from "../../sdk/protocol/index.js";
import { containersMoreThan, membersMoreThan } from "../json-shape.js";

/**
 * Reads the runtime's answer to one dispatch (`=` and a value's JSON, or `!` and an error's).
 * A result over `resultBytes` becomes `too_large`, an error with more shape than the runtime's
 * three short fields `handler_error` (the capsule's code can change what the runtime calls, and
 * parsing a deep one would be the host's main thread's work). Undefined for an answer the runtime
 * could not have given: the caller stops the isolate.
 */
export function readRuntimeAnswer(wire: unknown, resultBytes: number): DispatchResponse | undefined {
  if (typeof wire !== "string") return undefined;
  if (wire.length > resultBytes + 1) {
    return {
      ok: false,
      // 413 like every other "too big" (a body, a file, a bundle); 429 would say "retry later".
      error: { code: "too_large", message: `The handler's result is larger than ${resultBytes} characters.` },
    };
  }
  // Longer than the runtime makes one: an 8 Mi-character error cost 13.5 ms to parse, for 4 KiB kept.
  if (
    wire.startsWith("!") &&
    (wire.length > DISPATCH_ERROR_CHARS || containersMoreThan(wire, 8) || membersMoreThan(wire, 8))
  )
    return {
      ok: false,
      error: { code: "handler_error", message: "The handler failed with an error the platform cannot read." },
    };
  try {
    return decodeDispatchResponse(wire);
  } catch {
    return undefined;
  }
}
