/**
 * The handler dispatcher: the host's one entry point into an isolate. Finds the handler, builds
 * `ctx`, runs it, and turns the outcome into JSON (an endpoint's into its answer's head and body)
 * with a stable error code.
 */
import {
  DISPATCH_ERROR_MESSAGE_CHARS,
  type DispatchError,
  type DispatchRequest,
  type DispatchResponse,
  encodeDispatchResponse,
  encodeEndpointAnswer,
  endpointHead,
  handlerRequestFields,
  LIMITS,
} from "../sdk/protocol/index.js";
import { ERROR_STATUS, PlatformError } from "../sdk/values/index.js";
import { openLogCalls, settleLogCalls } from "./bridge.js";
import { createContext } from "./context.js";
import { beginExecution, currentExecution } from "./determinism.js";
import { createEndpointRequest } from "./endpoint-request.js";
import { serializeValue } from "./lazy-rows.js";
import { LegacySnapshot } from "./legacy.js";

interface LoadedCapsule {
  kind: "platform.capsule" | "platform.legacy";
  declaration: { schema: { tables: Record<string, unknown> } };
  definition: {
    queries?: Record<string, (ctx: unknown, args: unknown) => unknown>;
    mutations?: Record<string, (ctx: unknown, args: unknown) => unknown>;
    endpoints?: Record<string, { handler: (ctx: unknown, req: unknown) => unknown }>;
    auth?: { onGuestUpgrade?: (ctx: unknown, upgrade: unknown) => unknown };
  };
}

/** Taken before the capsule's code runs, which may replace `Object.hasOwn` (the host checks codes again). */
const hasOwn = Object.hasOwn;

/**
 * What the first request of a fresh isolate would otherwise make on its way, made while the runtime
 * loads (for the isolate the host makes ahead of a cold start, before any request waits): the
 * hidden classes and key strings of a query's request as the host sends it, and of a handler's
 * `ctx`. About 15 µs of the first request's CPU. Kept until then: V8 drops hidden classes no object
 * uses.
 */
let madeAhead: readonly unknown[] | null = [
  // A clock and a seed past V8's small integers, as real ones are: a field made for a small
  // integer takes another hidden class for the first real one.
  JSON.parse(
    JSON.stringify(
      Object.assign(handlerRequestFields("", "{}", null, {}, 1.7e12, 2 ** 32 - 1), { kind: "query" }),
    ),
  ),
  createContext({ requestId: 0, execution: currentExecution(), tables: [], identity: null, env: {} }),
];

let loaded: LoadedCapsule | undefined;
/** The loaded capsule's table names, listed once. */
let tableNames: readonly string[] = [];

function capsule(): LoadedCapsule {
  if (loaded) return loaded;
  const global = globalThis as Record<string, unknown>;
  const bundle = global.__platform_capsule as { default?: unknown } | undefined;
  global.__platform_capsule = undefined;
  const candidate = (bundle?.default ?? bundle) as LoadedCapsule | undefined;
  if (candidate?.kind !== "platform.capsule" && candidate?.kind !== "platform.legacy") {
    throw new PlatformError(
      "bad_request",
      "server/index.ts must `export default capsule({ ... })` from platform/server.",
    );
  }
  loaded = candidate;
  tableNames = Object.freeze(Object.keys(candidate.declaration.schema.tables));
  return candidate;
}

/**
 * The `at ...` lines of a thrown error's stack, cut at `LIMITS.errorStackChars`: where the handler
 * failed, for the developer (the host maps bundle positions to the capsule's source). The message
 * line is left out; it travels as `message`. A stack getter of the capsule's own may throw.
 */
function framesOf(error: unknown): string | undefined {
  let stack: unknown;
  try {
    stack = (error as { stack?: unknown }).stack;
  } catch {
    return undefined;
  }
  if (typeof stack !== "string") return undefined;
  // The frames come last, after the message, which may be long: split the tail only (the split of a
  // stack past the runtime's bound on `split` threw, and the dispatch with it; found by review).
  const tail = stack.length > 2 * LIMITS.errorStackChars ? stack.slice(-2 * LIMITS.errorStackChars) : stack;
  const frames = tail
    .split("\n")
    .filter((line) => line.trimStart().startsWith("at "))
    .join("\n");
  return frames === "" ? undefined : frames.slice(0, LIMITS.errorStackChars);
}

function cutMessage(message: string): string {
  return message.length > DISPATCH_ERROR_MESSAGE_CHARS
    ? message.slice(0, DISPATCH_ERROR_MESSAGE_CHARS)
    : message;
}

function toError(error: unknown): DispatchError {
  const stack = error && typeof error === "object" ? framesOf(error) : undefined;
  const withStack = (failure: DispatchError): DispatchError =>
    stack === undefined ? failure : Object.assign(failure, { stack });
  if (error && typeof error === "object" && (error as Error).name === "PlatformError") {
    const { code, message } = error as PlatformError;
    if (typeof code === "string" && hasOwn(ERROR_STATUS, code))
      return withStack({ code, message: cutMessage(String(message)) });
  }
  if (error instanceof Error)
    return withStack({
      code: "handler_error",
      message: cutMessage(`Uncaught ${error.name}: ${error.message}`),
    });
  let text: string;
  try {
    text = JSON.stringify(error) ?? String(error);
  } catch {
    text = String(error);
  }
  return { code: "handler_error", message: cutMessage(`Uncaught ${text}`) };
}

function lookup<T>(map: Record<string, T> | undefined, name: string, what: string): T {
  const handler = map && hasOwn(map, name) ? map[name] : undefined;
  if (handler === undefined)
    throw new PlatformError("not_found", `No ${what} named ${JSON.stringify(name)}.`);
  return handler;
}

function serialize(value: unknown): string {
  try {
    return serializeValue(value);
  } catch (error) {
    throw new PlatformError(
      "handler_error",
      `The handler returned a value that is not JSON: ${(error as Error).message}`,
    );
  }
}

/**
 * Runs a legacy handler synchronously on a snapshot of the shipped tables; mutations take their
 * arguments positionally (a JSON array body is spread). Answers a {@link LegacySnapshot} outcome.
 */
function runLegacy(
  app: LoadedCapsule,
  request: Extract<DispatchRequest, { kind: "legacyQuery" | "legacyMutation" }>,
  inline: boolean,
) {
  if (app.kind !== "platform.legacy")
    throw new PlatformError("internal", "This deployment's capsule is not a legacy capsule.");
  const tables = Object.keys(app.declaration.schema.tables);
  const snapshot = new LegacySnapshot(request.tablesJson, request.ids, tables, request.now);
  const execution = beginExecution(request.requestId, request.now, request.seed, inline);
  const ctx = createContext({
    requestId: request.requestId,
    execution,
    tables,
    identity: request.identity,
    env: request.env,
    db: snapshot.database(),
  });
  const mutation = request.kind === "legacyMutation";
  const handler = lookup(
    (mutation ? app.definition.mutations : app.definition.queries) as Record<
      string,
      (...a: unknown[]) => unknown
    >,
    request.name,
    mutation ? "mutation" : "query",
  );
  let value: unknown;
  try {
    const args = JSON.parse(request.argsJson) as unknown;
    value = mutation ? handler(ctx, ...(Array.isArray(args) ? args : [args])) : handler(ctx, args);
  } catch (error) {
    if (snapshot.isNeed(error)) return serialize(snapshot.outcome(undefined));
    throw error;
  }
  if (snapshot.needs) return serialize(snapshot.outcome(undefined));
  if (value && typeof (value as { then?: unknown }).then === "function") {
    throw new PlatformError(
      "handler_error",
      `Legacy handlers are synchronous, but ${request.name} returned a promise. Move the capsule to database API v1 (platform migrate) to use async handlers.`,
    );
  }
  return serialize(snapshot.outcome(value));
}

async function run(request: DispatchRequest, inline: boolean): Promise<string> {
  const app = capsule();
  if (request.kind === "declare") return JSON.stringify(app.declaration);
  if (request.kind === "legacyQuery" || request.kind === "legacyMutation") {
    // A legacy capsule's requests and ctx are of other shapes: nothing uses what was made ahead.
    madeAhead = null;
    return runLegacy(app, request, inline);
  }
  if (app.kind === "platform.legacy")
    throw new PlatformError("internal", "A legacy capsule runs on the snapshot runtime only.");
  const execution = beginExecution(request.requestId, request.now, request.seed, inline);
  const ctx = createContext({
    requestId: request.requestId,
    execution,
    tables: tableNames,
    identity: request.identity,
    env: request.env,
  });
  // This request's own objects hold those hidden classes from here on.
  if (madeAhead !== null) madeAhead = null;
  switch (request.kind) {
    case "query": {
      const handler = lookup(app.definition.queries, request.name, "query");
      return serialize(await handler(ctx, JSON.parse(request.argsJson)));
    }
    case "mutation": {
      const handler = lookup(app.definition.mutations, request.name, "mutation");
      return serialize(await handler(ctx, JSON.parse(request.argsJson)));
    }
    case "endpoint": {
      const endpoint = lookup(app.definition.endpoints, request.name, "endpoint");
      const response = (await endpoint.handler(ctx, createEndpointRequest(request.request))) as {
        kind?: unknown;
        status?: unknown;
        headers?: unknown;
        body?: unknown;
      } | null;
      if (response?.kind !== "platform.response") {
        throw new PlatformError(
          "handler_error",
          `Endpoint ${request.name} must return json(...) or text(...) from platform/server.`,
        );
      }
      // Checked here, inside the handler's transaction: a mutation's writes roll back with it.
      const head = endpointHead(response.status, response.headers, request.name);
      const headJson = JSON.stringify({ status: head.status, headers: Object.fromEntries(head.headers) });
      return encodeEndpointAnswer(headJson, typeof response.body === "string" ? response.body : "");
    }
    case "guestUpgrade": {
      const hook = app.definition.auth?.onGuestUpgrade;
      if (typeof hook === "function")
        await hook(ctx, { guestUserId: request.guestUserId, userId: request.userId });
      return "null";
    }
  }
}

/**
 * Runs one dispatch request as execution `requestId` (the host numbers executions); never throws
 * (errors become `{ ok: false }`). `inline`: the host entered synchronously on its main thread, so
 * platform calls use the inline transport.
 */
export async function dispatch(requestId: number, requestJson: string, inline = false): Promise<string> {
  let response: DispatchResponse;
  openLogCalls(requestId);
  try {
    const request = JSON.parse(requestJson) as DispatchRequest;
    if ("requestId" in request) request.requestId = requestId;
    response = { ok: true, valueJson: await run(request, inline) };
  } catch (error) {
    response = { ok: false, error: toError(error) };
  }
  const logging = settleLogCalls(requestId);
  if (logging) await logging;
  const wire = encodeDispatchResponse(response);
  // Refused here, not after the host copied up to a heap's worth of it into its own memory.
  if (wire.length <= LIMITS.resultBytes + 1) return wire;
  return encodeDispatchResponse({
    ok: false,
    error: {
      code: "too_large",
      message: `The handler's result is larger than ${LIMITS.resultBytes} characters.`,
    },
  });
}
