import { ERROR_STATUS, type ErrorCode, PlatformError } from "../values/index.js";

/** Codes for failures whose body carries no code we know, by HTTP status. */
const CODE_OF_STATUS: Partial<Record<number, ErrorCode>> = {
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
};

/** The server's code when it is one we know, else one from the status (the message is kept either way). */
export function errorFromWire(
  wire: unknown,
  fallbackStatus = 500,
  retryAfterSeconds?: number,
): PlatformError {
  const error = (wire ?? {}) as { code?: unknown; message?: unknown };
  const code =
    typeof error.code === "string" && Object.hasOwn(ERROR_STATUS, error.code)
      ? (error.code as ErrorCode)
      : (CODE_OF_STATUS[fallbackStatus] ?? "internal");
  const message = typeof error.message === "string" ? error.message : `Request failed (${fallbackStatus}).`;
  return new PlatformError(
    code,
    message,
    retryAfterSeconds === undefined ? undefined : { retryAfterSeconds },
  );
}

/** A response's `Retry-After` in seconds, when it is a whole number of them (the host's form). */
function retryAfterOf(response: Response): number | undefined {
  const header = response.headers.get("retry-after");
  return header !== null && /^\d{1,6}$/.test(header) ? Number(header) : undefined;
}

/**
 * Reads a platform response: the JSON body of a success, or the error envelope
 * `{ error: { code, message } }` of a failure turned into a {@link PlatformError} with that code.
 */
export async function readResponse(response: Response): Promise<unknown> {
  return readResponseText(response, await response.text());
}

/** {@link readResponse} with the body already read as `text`. */
export function readResponseText(response: Response, text: string): unknown {
  let body: unknown = null;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      if (response.ok)
        throw new PlatformError("internal", "The server answered with something other than JSON.");
    }
  }
  if (!response.ok)
    throw errorFromWire((body as { error?: unknown } | null)?.error, response.status, retryAfterOf(response));
  return body;
}

/** A network failure (no answer at all) as a retryable `unavailable` error. */
export function unreachable(url: string, cause: unknown): PlatformError {
  return new PlatformError("unavailable", `Could not reach ${url}: ${(cause as Error)?.message ?? cause}`, {
    cause,
  });
}

/**
 * True for a `502`, `503` or `504` that did not come from a platform host (no error envelope): a
 * load balancer or proxy that found no host to answer, or lost the connection to one. The call may
 * not have reached a host, or reached one that stopped before answering.
 */
export function isGatewayFailure(status: number, text: string): boolean {
  if (status !== 502 && status !== 503 && status !== 504) return false;
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown } } | null;
    return typeof body?.error?.code !== "string";
  } catch {
    return true;
  }
}
