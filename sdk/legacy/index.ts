/**
 * `platform/legacy`: the legacy authoring API (database API v0), kept so capsules written against
 * it still build and their artifacts keep running on the snapshot runtime (docs/capsules.md "Versioning").
 * New capsules use `platform/server`; `platform migrate` rewrites a legacy capsule to it.
 *
 * Legacy handlers are synchronous; tables have no declared indexes; mutations take positional
 * arguments; `insert` returns the new row.
 *
 * @example
 * export default app({
 *   schema: { todos: { text: string(), done: boolean() } },
 *   queries: { open: (ctx) => ctx.db.todos.where("done", false).orderBy("createdAt", "desc").limit(20).all() },
 *   mutations: { add: (ctx, text: string) => ctx.db.todos.insert({ text, done: false }) },
 * });
 */
import type { CapsuleDeclaration } from "../protocol/index.js";
import type { AnyField } from "../server/fields.js";
import { checkSchemaSpec, type FieldValue, PlatformError, type SchemaSpec } from "../values/index.js";

export { boolean, id, number, string, userId } from "../server/fields.js";

/** A stored legacy row: `id`, `createdAt` (an ISO 8601 string) and the table's fields. */
export type LegacyRow = { id: string; createdAt: string } & Record<string, FieldValue>;

/** A chain of `where` / `orderBy` / `limit`, ended by `all()` or `first()`. */
export interface LegacyQuery {
  where(field: string, value: FieldValue): LegacyQuery;
  orderBy(field: string, direction?: "asc" | "desc"): LegacyQuery;
  limit(n: number): LegacyQuery;
  all(): LegacyRow[];
  first(): LegacyRow | null;
}

/** `ctx.db.<table>` of a legacy handler: synchronous reads over a snapshot, writes at commit. */
export interface LegacyTable extends LegacyQuery {
  get(id: string): LegacyRow | null;
  insert(row: Record<string, FieldValue | null>): LegacyRow;
  update(id: string, patch: Record<string, FieldValue | null>): void;
  delete(id: string): void;
}

/** A legacy schema: table name -> field name -> field type. */
export type LegacySchema = Record<string, Record<string, AnyField>>;

/** The context of a legacy handler; `ctx.db` has one entry per table of the schema. */
export interface LegacyCtx<S extends LegacySchema = LegacySchema> {
  db: { readonly [T in keyof S]: LegacyTable };
  auth: {
    requireIdentity(): { userId: string; kind: "guest" | "account"; email?: string };
    requireSignedIn(): { userId: string; kind: "account"; email: string };
    getIdentity(): { userId: string; kind: "guest" | "account"; email?: string } | null;
  };
  env: Readonly<Record<string, string>>;
  log: Record<"info" | "warn" | "error", (message: string, fields?: Record<string, unknown>) => void>;
}

/** What a legacy capsule declares. */
export interface LegacyDefinition<S extends LegacySchema = LegacySchema> {
  /** Table name -> field name -> field type. No indexes. */
  schema: S;
  // biome-ignore lint/suspicious/noExplicitAny: arguments are caller-supplied JSON; authors annotate them.
  queries?: Record<string, (ctx: LegacyCtx<S>, args: any) => unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: positional arguments, as the legacy API passed them.
  mutations?: Record<string, (ctx: LegacyCtx<S>, ...args: any[]) => unknown>;
  auth?: { requireSignIn?: boolean; onGuestUpgrade?: unknown };
}

/** A declared legacy capsule. */
export interface LegacyApp<S extends LegacySchema = LegacySchema> {
  readonly kind: "platform.legacy";
  readonly definition: LegacyDefinition<S>;
  readonly declaration: CapsuleDeclaration;
}

function names(kind: string, handlers: Record<string, unknown> | undefined): string[] {
  for (const [name, handler] of Object.entries(handlers ?? {}))
    if (typeof handler !== "function")
      throw new PlatformError("bad_request", `${kind} ${name} must be a function.`);
  return Object.keys(handlers ?? {});
}

/** Declares a legacy capsule (`export default app({...})`). */
export function app<S extends LegacySchema>(definition: LegacyDefinition<S>): LegacyApp<S> {
  const tables: SchemaSpec["tables"] = {};
  for (const [table, fields] of Object.entries(definition.schema ?? {})) {
    const spec: SchemaSpec["tables"][string] = { fields: {}, indexes: {} };
    for (const [name, field] of Object.entries(fields)) spec.fields[name] = field.spec;
    tables[table] = spec;
  }
  return {
    kind: "platform.legacy",
    definition,
    declaration: {
      apiVersion: 0,
      schema: checkSchemaSpec({ tables }),
      queries: names("query", definition.queries),
      mutations: names("mutation", definition.mutations),
      endpoints: [],
      auth: {
        requireSignIn: definition.auth?.requireSignIn === true,
        hasGuestUpgradeHook: typeof definition.auth?.onGuestUpgrade === "function",
      },
    },
  };
}
