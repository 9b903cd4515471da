import { LIMITS } from "../protocol/limits.js";
import { PlatformError } from "../values/index.js";

/**
 * True when `text` is over what the host takes in one message (its UTF-8 bytes): it would close
 * the socket (1009), and the message, sent again on the next socket, would close that one too.
 */
export function overMessageLimit(text: string): boolean {
  // A UTF-16 unit takes at most 3 bytes in UTF-8: most messages are settled by their length.
  if (text.length * 3 <= LIMITS.requestBodyBytes) return false;
  return new TextEncoder().encode(text).length > LIMITS.requestBodyBytes;
}

/** Why a message over {@link overMessageLimit} is not sent. */
export function tooLarge(what: string): PlatformError {
  return new PlatformError(
    "bad_request",
    `The ${what}'s arguments are too large to send: a message to the host holds at most ${LIMITS.requestBodyBytes} bytes. Pass ids, not data.`,
  );
}
