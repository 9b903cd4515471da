import { LIMITS } from "../../sdk/protocol/index.js";
import { redactSecrets } from "./redact.js";

/**
 * A log line's fields as kept: env values redacted, and cut to `{ truncated }` text past
 * {@link LIMITS.logFieldsChars} or when they cannot be written as JSON (nested too deep).
 */
export function loggedFields(
  fields: Record<string, unknown>,
  env: Record<string, string>,
): Record<string, unknown> {
  let json: string;
  try {
    json = JSON.stringify(fields);
  } catch {
    return { truncated: "[fields that cannot be written as JSON]" };
  }
  if (json.length > LIMITS.logFieldsChars)
    return { truncated: redactSecrets(json, env, LIMITS.logFieldsChars) };
  const redacted = redactSecrets(json, env);
  if (redacted === json) return fields;
  try {
    return JSON.parse(redacted) as Record<string, unknown>;
  } catch {
    // An env value that spans JSON punctuation leaves text that no longer parses.
    return { truncated: redacted };
  }
}
