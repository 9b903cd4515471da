import type { CapsuleDeclaration } from "../protocol/index.js";
import { checkSchemaSpec, PlatformError, type SchemaSpec } from "../values/index.js";
import type { MutationCtx, QueryCtx } from "./context.js";
import type { SchemaDefinition } from "./data-model.js";
import type { EndpointDefinition } from "./endpoint.js";
import type { UserId } from "./fields.js";

/** A query handler: reads only. `Args` is whatever JSON the client sent. */
// biome-ignore lint/suspicious/noExplicitAny: arguments are caller-supplied JSON; authors annotate them.
export type QueryHandler<S extends SchemaDefinition, Args = any, Result = unknown> = (
  ctx: QueryCtx<S>,
  args: Args,
) => Result | Promise<Result>;

/** A mutation handler: reads and writes in one transaction. */
// biome-ignore lint/suspicious/noExplicitAny: arguments are caller-supplied JSON; authors annotate them.
export type MutationHandler<S extends SchemaDefinition, Args = any, Result = unknown> = (
  ctx: MutationCtx<S>,
  args: Args,
) => Result | Promise<Result>;

/** App-wide auth settings (docs/capsules.md "Auth"). */
export interface AuthSettings<S extends SchemaDefinition> {
  /** Every query, mutation and storage read needs a signed-in account. Default false. */
  requireSignIn?: boolean;
  /** App-specific merge rules run in the same transaction as the `userId()` transfer. */
  onGuestUpgrade?: (
    ctx: MutationCtx<S>,
    upgrade: { guestUserId: UserId; userId: UserId },
  ) => void | Promise<void>;
}

/** Any map of query handlers of schema `S`. */
export type QueryMap<S extends SchemaDefinition> = Record<string, QueryHandler<S>>;
/** Any map of mutation handlers of schema `S`. */
export type MutationMap<S extends SchemaDefinition> = Record<string, MutationHandler<S>>;

/**
 * What authors pass to `capsule()`. `Q` and `M` keep the exact handler maps, so a client can be
 * typed from the capsule (`createClient<typeof app>(url)`).
 */
export interface CapsuleDefinition<
  S extends SchemaDefinition,
  Q extends QueryMap<S> = QueryMap<S>,
  M extends MutationMap<S> = MutationMap<S>,
> {
  schema: S;
  queries?: Q;
  mutations?: M;
  /**
   * Endpoints do not take part in inferring the schema type (`endpoint()` is called on its own);
   * write `endpoint<typeof schema>(...)` for a schema-typed `ctx` inside one.
   */
  // biome-ignore lint/suspicious/noExplicitAny: any endpoint, read-only or not, of any schema.
  endpoints?: Record<string, EndpointDefinition<any, any>>;
  auth?: AuthSettings<NoInfer<S>>;
}

/** A declared capsule: the author's definition plus its JSON declaration for the host. */
export interface Capsule<
  S extends SchemaDefinition,
  Q extends QueryMap<S> = QueryMap<S>,
  M extends MutationMap<S> = MutationMap<S>,
> {
  readonly kind: "platform.capsule";
  readonly definition: CapsuleDefinition<S, Q, M>;
  readonly declaration: CapsuleDeclaration;
}

function schemaToSpec(schema: SchemaDefinition): SchemaSpec {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema))
    throw new PlatformError(
      "bad_request",
      "capsule({ schema }) needs a schema: an object of tables, as { todos: table({ text: string() }) }, or {} for none.",
    );
  const tables: SchemaSpec["tables"] = {};
  for (const [name, definition] of Object.entries(schema)) {
    if (typeof (definition as { toSpec?: unknown } | null)?.toSpec !== "function")
      throw new PlatformError(
        "bad_request",
        `schema.${name} must be a table: table({ ... }) from platform/server.`,
      );
    tables[name] = definition.toSpec();
  }
  return checkSchemaSpec({ tables });
}

function handlerNames(kind: string, handlers: Record<string, unknown> | undefined): string[] {
  const names = Object.keys(handlers ?? {});
  for (const name of names) {
    if (typeof handlers?.[name] !== "function") {
      throw new PlatformError("bad_request", `${kind} ${name} must be a function (ctx, args) => result.`);
    }
  }
  return names;
}

/**
 * Declares a capsule; `export default capsule({...})` from `server/index.ts`. Checks the schema and
 * handler maps at once, so a mistake fails the deploy with a clear message.
 *
 * @example
 * export default capsule({
 *   schema: { todos: table({ text: string() }) },
 *   queries: { list: async (ctx) => ctx.db.todos.take(50) },
 * });
 */
export function capsule<S extends SchemaDefinition, Q extends QueryMap<S>, M extends MutationMap<S>>(
  definition: CapsuleDefinition<S, Q, M>,
): Capsule<S, Q, M> {
  if (typeof definition !== "object" || definition === null)
    throw new PlatformError(
      "bad_request",
      "capsule() takes an object: capsule({ schema, queries, mutations, endpoints, auth }).",
    );
  const endpoints = Object.entries(definition.endpoints ?? {}).map(([name, value]) => {
    if (value?.kind !== "platform.endpoint") {
      throw new PlatformError(
        "bad_request",
        `endpoint ${name} must be declared with endpoint({ method, path, readOnly }, handler).`,
      );
    }
    const { method, path, readOnly } = value.options;
    return { name, method: String(method).toUpperCase(), path, readOnly: readOnly === true };
  });
  const declaration: CapsuleDeclaration = {
    apiVersion: 1,
    schema: schemaToSpec(definition.schema),
    queries: handlerNames("query", definition.queries),
    mutations: handlerNames("mutation", definition.mutations),
    endpoints,
    auth: {
      requireSignIn: definition.auth?.requireSignIn === true,
      hasGuestUpgradeHook: typeof definition.auth?.onGuestUpgrade === "function",
    },
  };
  return { kind: "platform.capsule", definition, declaration };
}

/** Optional typing helper for a query handler; returns it unchanged. */
export function query<S extends SchemaDefinition = SchemaDefinition, Args = unknown, Result = unknown>(
  handler: QueryHandler<S, Args, Result>,
): QueryHandler<S, Args, Result> {
  return handler;
}

/** Optional typing helper for a mutation handler; returns it unchanged. */
export function mutation<S extends SchemaDefinition = SchemaDefinition, Args = unknown, Result = unknown>(
  handler: MutationHandler<S, Args, Result>,
): MutationHandler<S, Args, Result> {
  return handler;
}
