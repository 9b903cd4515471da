/**
 * The handler dispatcher: the host's one entry point into an isolate. Finds the handler, builds
 * `ctx`, runs it, and turns the outcome into JSON with a stable error code.
 */
import {
  type DispatchRequest,
  type DispatchResponse,
  encodeDispatchResponse,
} from "../sdk/protocol/index.js";
import { ERROR_STATUS, PlatformError } from "../sdk/values/index.js";
import { createContext } from "./context.js";
import { beginExecution } from "./determinism.js";
import { createEndpointRequest } from "./endpoint-request.js";

interface LoadedCapsule {
  kind: "platform.capsule";
  declaration: { schema: { tables: Record<string, unknown> } };
  definition: {
    queries?: Record<string, (ctx: unknown, args: unknown) => unknown>;
    mutations?: Record<string, (ctx: unknown, args: unknown) => unknown>;
    endpoints?: Record<string, { handler: (ctx: unknown, req: unknown) => unknown }>;
    auth?: { onGuestUpgrade?: (ctx: unknown, upgrade: unknown) => unknown };
  };
}

let loaded: LoadedCapsule | undefined;

function capsule(): LoadedCapsule {
  if (loaded) return loaded;
  const global = globalThis as Record<string, unknown>;
  const bundle = global.__platform_capsule as { default?: unknown } | undefined;
  global.__platform_capsule = undefined;
  const candidate = (bundle?.default ?? bundle) as LoadedCapsule | undefined;
  if (candidate?.kind !== "platform.capsule") {
    throw new PlatformError(
      "bad_request",
      "server/index.ts must `export default capsule({ ... })` from platform/server.",
    );
  }
  loaded = candidate;
  return candidate;
}

function toError(error: unknown): { code: string; message: string } {
  if (error && typeof error === "object" && (error as Error).name === "PlatformError") {
    const { code, message } = error as PlatformError;
    if (typeof code === "string" && Object.hasOwn(ERROR_STATUS, code))
      return { code, message: String(message) };
  }
  if (error instanceof Error)
    return { code: "handler_error", message: `Uncaught ${error.name}: ${error.message}` };
  let text: string;
  try {
    text = JSON.stringify(error) ?? String(error);
  } catch {
    text = String(error);
  }
  return { code: "handler_error", message: `Uncaught ${text}` };
}

function lookup<T>(map: Record<string, T> | undefined, name: string, what: string): T {
  const handler = map && Object.hasOwn(map, name) ? map[name] : undefined;
  if (handler === undefined)
    throw new PlatformError("not_found", `No ${what} named ${JSON.stringify(name)}.`);
  return handler;
}

function serialize(value: unknown): string {
  try {
    return JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    throw new PlatformError(
      "handler_error",
      `The handler returned a value that is not JSON: ${(error as Error).message}`,
    );
  }
}

async function run(request: DispatchRequest): Promise<string> {
  const app = capsule();
  if (request.kind === "declare") return JSON.stringify(app.declaration);
  const execution = beginExecution(request.now, request.seed);
  const ctx = createContext({
    requestId: request.requestId,
    execution,
    tables: Object.keys(app.declaration.schema.tables),
    identity: request.identity,
    env: request.env,
  });
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
      } | null;
      if (response?.kind !== "platform.response") {
        throw new PlatformError(
          "handler_error",
          `Endpoint ${request.name} must return json(...) or text(...) from platform/server.`,
        );
      }
      return serialize(response);
    }
    case "guestUpgrade": {
      const hook = app.definition.auth?.onGuestUpgrade;
      if (typeof hook === "function")
        await hook(ctx, { guestUserId: request.guestUserId, userId: request.userId });
      return "null";
    }
  }
}

/** Runs one dispatch request; never throws (errors become `{ ok: false }`). */
export async function dispatch(requestJson: string): Promise<string> {
  let response: DispatchResponse;
  try {
    response = { ok: true, valueJson: await run(JSON.parse(requestJson) as DispatchRequest) };
  } catch (error) {
    response = { ok: false, error: toError(error) };
  }
  return encodeDispatchResponse(response);
}
