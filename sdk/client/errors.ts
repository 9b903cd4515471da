import { ERROR_STATUS, type ErrorCode, PlatformError } from "../values/index.js";

/** Codes for failures whose body carries no code we know, by HTTP status. */
const CODE_OF_STATUS: Partial<Record<number, ErrorCode>> = {
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
};

/** The server's code when it is one we know, else one from the status (the message is kept either way). */
export function errorFromWire(wire: unknown, fallbackStatus = 500): PlatformError {
  const error = (wire ?? {}) as { code?: unknown; message?: unknown };
  const code =
    typeof error.code === "string" && Object.hasOwn(ERROR_STATUS, error.code)
      ? (error.code as ErrorCode)
      : (CODE_OF_STATUS[fallbackStatus] ?? "internal");
  const message = typeof error.message === "string" ? error.message : `Request failed (${fallbackStatus}).`;
  return new PlatformError(code, message);
}

/**
 * Reads a platform response: the JSON body of a success, or the error envelope
 * `{ error: { code, message } }` of a failure turned into a {@link PlatformError} with that code.
 */
export async function readResponse(response: Response): Promise<unknown> {
  const text = await response.text();
  let body: unknown = null;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      if (response.ok)
        throw new PlatformError("internal", "The server answered with something other than JSON.");
    }
  }
  if (!response.ok) throw errorFromWire((body as { error?: unknown } | null)?.error, response.status);
  return body;
}

/** A network failure (no answer at all) as a retryable `unavailable` error. */
export function unreachable(url: string, cause: unknown): PlatformError {
  return new PlatformError("unavailable", `Could not reach ${url}: ${(cause as Error)?.message ?? cause}`, {
    cause,
  });
}
