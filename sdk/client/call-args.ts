import { PlatformError } from "../values/index.js";

/**
 * A call's arguments as the JSON text that is sent (`undefined` and `null` are `{}`). Arguments
 * that do not turn into JSON fail at once with `bad_request`, before anything is queued or sent:
 * `JSON.stringify` gives `undefined` for a function, a symbol or a `toJSON` answering `undefined`,
 * which made a socket message with no arguments that never got an answer, and it throws for a
 * `BigInt` or a cycle.
 */
export function argsJson(args: unknown, call: string): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(args ?? {});
  } catch (error) {
    throw notJson(call, String((error as Error)?.message ?? error).split("\n")[0] ?? "", error);
  }
  if (json === undefined)
    throw notJson(
      call,
      typeof args === "object" ? "its toJSON() gives undefined" : `JSON has no ${typeof args}`,
    );
  return json;
}

function notJson(call: string, why: string, cause?: unknown): PlatformError {
  return new PlatformError(
    "bad_request",
    `The arguments of ${call} do not turn into JSON (${why}): pass a plain object of JSON values (strings, numbers, booleans, null, arrays and objects of them), such as { id: "..." }.`,
    cause === undefined ? undefined : { cause },
  );
}
