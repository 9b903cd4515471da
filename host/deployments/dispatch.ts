import { randomBytes } from "node:crypto";
import { type DispatchRequest, LIMITS } from "../../sdk/protocol/index.js";
import { ERROR_STATUS, type ErrorCode, PlatformError } from "../../sdk/values/index.js";
import type { CallRecord } from "./log-hub.js";
import { redactSecrets } from "./redact.js";

let seedPool = randomBytes(4096);
let seedAt = 0;

/** A random seed for `Math.random` in one execution, drawn from a pooled buffer. */
export function nextSeed(): number {
  if (seedAt === seedPool.length) {
    seedPool = randomBytes(4096);
    seedAt = 0;
  }
  const seed = seedPool.readUInt32LE(seedAt);
  seedAt += 4;
  return seed;
}

/** How the call log names each kind of dispatch (legacy calls are queries and mutations too). */
export const CALL_KINDS = {
  declare: "query",
  query: "query",
  mutation: "mutation",
  endpoint: "endpoint",
  guestUpgrade: "guestUpgrade",
  legacyQuery: "query",
  legacyMutation: "mutation",
} as const satisfies Record<DispatchRequest["kind"], CallRecord["kind"]>;

/**
 * A handler's failure as the caller sees it: the code the runtime chose (a platform code: see
 * {@link capsuleErrorCode}), and the message cut and without any of the deployment's env values (a
 * handler may have put a secret into it).
 */
export function handlerError(
  error: { code: string; message: string },
  env: Record<string, string>,
): PlatformError {
  return new PlatformError(
    capsuleErrorCode(error.code),
    redactSecrets(String(error.message), env, LIMITS.errorMessageChars),
  );
}

/**
 * The code of an error an isolate answered, as the host takes it: one of the platform's codes, or
 * else `handler_error`. The runtime sends only those, but the isolate runs the capsule's code,
 * which can change what the runtime calls: a code of its own making would become a metrics series
 * and a log field per distinct value (a million of 1 MiB each), or an answer without its envelope.
 */
export function capsuleErrorCode(code: unknown): ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERROR_STATUS, code)
    ? (code as ErrorCode)
    : "handler_error";
}
