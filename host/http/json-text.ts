import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { checkJsonShape } from "../json-shape.js";

/**
 * A request body's JSON text, checked for its shape (json-shape.ts) and parsed; `400 bad_request`
 * when it is not JSON. Runs on the main thread for small bodies and on the JSON thread for large
 * ones (json-off-thread.ts), the same way.
 */
export function parseJsonText(text: string): unknown {
  checkJsonShape(text, "The request body", LIMITS.jsonMembers, LIMITS.jsonMembers, "bad_request", true);
  try {
    return JSON.parse(text);
  } catch {
    throw new PlatformError("bad_request", "The request body must be JSON.");
  }
}
