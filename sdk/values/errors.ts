/**
 * Stable error codes. Clients, the CLI and tests recognise failures by these codes, never by
 * message text, so a code once published is never renamed.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  invalid_request: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  too_large: 413,
  quota_exceeded: 413,
  blocked_type: 415,
  limit_exceeded: 429,
  handler_error: 500,
  internal: 500,
  unavailable: 503,
  timeout: 504,
  out_of_memory: 507,
} as const;

/** 5xx codes whose messages are meant for callers (the rest show only "Internal error."). */
const EXPOSED_SERVER_ERRORS: ReadonlySet<string> = new Set([
  "handler_error",
  "timeout",
  "out_of_memory",
  "unavailable",
]);

/** One of the stable error codes of {@link ERROR_STATUS}. */
export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * The one error type of the platform. Everything that fails on purpose throws this, so that every
 * boundary (isolate -> host, host -> HTTP, HTTP -> client) can carry `{ code, message }` unchanged.
 * `expose` follows Koa: the message of a 4xx is shown to callers, a 5xx shows only a generic text.
 */
export class PlatformError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly expose: boolean;
  /** When the caller may try again (seconds), sent as `Retry-After` by the HTTP layer. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; retryAfterSeconds?: number }) {
    super(message, options);
    this.name = "PlatformError";
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.expose = this.status < 500 || EXPOSED_SERVER_ERRORS.has(code);
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }

  /** The wire form: the `error` member of the envelope `{ error: { code, message } }`. */
  toJSON(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

/**
 * What a caller is told of `error`: its code and message when it is a platform error meant for
 * callers ({@link PlatformError.expose}), else only "Internal error.": a server error's own
 * message stays on the host.
 */
export function callerError(error: unknown): { code: ErrorCode; message: string } {
  return isPlatformError(error) && error.expose
    ? error.toJSON()
    : { code: "internal", message: "Internal error." };
}

/** True when `value` is a {@link PlatformError} with the given code (any code when omitted). */
export function isPlatformError(value: unknown, code?: ErrorCode): value is PlatformError {
  return value instanceof PlatformError && (code === undefined || value.code === code);
}
