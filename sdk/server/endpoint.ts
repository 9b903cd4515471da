import type { MutationCtx, QueryCtx } from "./context.js";
import type { SchemaDefinition } from "./data-model.js";

/** Read access to headers or query parameters; absent names give `null`. */
export interface ValueReader {
  get(name: string): string | null;
}

/** The request a custom endpoint handler receives. */
export interface EndpointRequest {
  method: string;
  path: string;
  headers: ValueReader;
  query: ValueReader;
  text(): Promise<string>;
  json(): Promise<unknown>;
  bytes(): Promise<Uint8Array>;
}

/** Options of `json()` and `text()`. */
export interface ResponseOptions {
  status?: number;
  headers?: Record<string, string>;
}

/** A response built by `json()` or `text()`; anything else returned from an endpoint is an error. */
export interface EndpointResponse {
  readonly kind: "platform.response";
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A JSON response (`Content-Type: application/json`). */
export function json(value: unknown, options: ResponseOptions = {}): EndpointResponse {
  return {
    kind: "platform.response",
    status: options.status ?? 200,
    headers: { "content-type": "application/json; charset=utf-8", ...options.headers },
    body: JSON.stringify(value) ?? "null",
  };
}

/** A plain-text response. */
export function text(body: string, options: ResponseOptions = {}): EndpointResponse {
  return {
    kind: "platform.response",
    status: options.status ?? 200,
    headers: { "content-type": "text/plain; charset=utf-8", ...options.headers },
    body,
  };
}

/** Where and how an endpoint is served. `readOnly: false` endpoints run as mutations. */
export interface EndpointOptions<ReadOnly extends boolean> {
  method: string;
  path: string;
  readOnly: ReadOnly;
}

/** A declared endpoint: its route and its handler. */
export interface EndpointDefinition<
  S extends SchemaDefinition = SchemaDefinition,
  ReadOnly extends boolean = boolean,
> {
  readonly kind: "platform.endpoint";
  readonly options: EndpointOptions<ReadOnly>;
  readonly handler: (
    ctx: ReadOnly extends true ? QueryCtx<S> : MutationCtx<S>,
    req: EndpointRequest,
  ) => EndpointResponse | Promise<EndpointResponse>;
}

/**
 * Declares a custom HTTP endpoint served at the deployment's origin.
 *
 * @example
 * endpoint({ method: "GET", path: "/hello", readOnly: true }, async (ctx, req) => text("hi"))
 */
export function endpoint<S extends SchemaDefinition = SchemaDefinition, ReadOnly extends boolean = boolean>(
  options: EndpointOptions<ReadOnly>,
  handler: EndpointDefinition<S, ReadOnly>["handler"],
): EndpointDefinition<S, ReadOnly> {
  return { kind: "platform.endpoint", options, handler };
}
