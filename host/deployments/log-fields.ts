import { LIMITS } from "../../sdk/protocol/index.js";
import { redactSecrets } from "./redact.js";

/**
 * A log line's fields as kept: env values redacted, and cut to `{ truncated }` text past
 * {@link LIMITS.logFieldsChars} or when they cannot be written as JSON (nested too deep); with
 * the characters of their JSON, which the log ring counts.
 */
export function loggedFields(
  fields: Record<string, unknown>,
  env: Record<string, string>,
): { fields: Record<string, unknown>; chars: number } {
  let json: string;
  try {
    json = JSON.stringify(fields);
  } catch {
    return truncated("[fields that cannot be written as JSON]");
  }
  if (json.length > LIMITS.logFieldsChars) return truncated(redactSecrets(json, env, LIMITS.logFieldsChars));
  const redacted = redactSecrets(json, env);
  if (redacted === json) return { fields, chars: json.length };
  try {
    return { fields: JSON.parse(redacted) as Record<string, unknown>, chars: redacted.length };
  } catch {
    // An env value that spans JSON punctuation leaves text that no longer parses.
    return truncated(redacted);
  }
}

function truncated(text: string): { fields: Record<string, unknown>; chars: number } {
  return { fields: { truncated: text }, chars: text.length };
}
