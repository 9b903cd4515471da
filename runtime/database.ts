/**
 * The `ctx.db` object handlers use. Runs inside the isolate (and in host tests): it only builds
 * query descriptions and hands them to an executor; every rule and budget is enforced by the host.
 */
import type { PaginationOptions, QuerySpec, QueryTerminal, RangeOp } from "../sdk/protocol/index.js";
import { PlatformError } from "../sdk/values/index.js";

/** The host operations behind `ctx.db`: in the isolate, the syscall bridge. */
export interface DatabaseExecutor {
  get(table: string, id: string): Promise<unknown>;
  query(spec: QuerySpec, terminal: QueryTerminal): Promise<unknown>;
  insert(table: string, row: unknown): Promise<string>;
  update(table: string, id: string, patch: unknown): Promise<void>;
  delete(table: string, id: string): Promise<void>;
}

type Value = string | number | boolean | null;

/**
 * JSON turns NaN and Infinity into `null` ("no value"), so they are refused here, before they cross
 * to the host, with the same message the host gives.
 */
function checkFinite(table: string, values: unknown, where = ""): void {
  if (typeof values !== "object" || values === null) return;
  for (const [field, value] of Object.entries(values)) {
    if (typeof value === "number" && !Number.isFinite(value)) {
      throw new PlatformError(
        "bad_request",
        `Invalid value for ${table}.${field}${where}: NaN and Infinity are not allowed.`,
      );
    }
  }
}

/**
 * Refuses a row id that is not a string, naming the table, the method and what was given: a
 * missing argument (`get(args.notebook)` without `notebook`) would otherwise reach the host as a
 * malformed call that names neither.
 */
function idProblem(table: string, method: string, id: unknown): PlatformError | undefined {
  if (typeof id === "string") return undefined;
  return new PlatformError(
    "bad_request",
    `${table}.${method}() needs a row id (a string), got ${described(id)}.`,
  );
}

/** A value as an error message names it: described, never serialised (it may hold millions of objects). */
function described(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "an object";
  if (value === null || typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value;
}

class RangeRecorder {
  readonly ops: RangeOp[] = [];
  readonly __range = true;
  private add(op: RangeOp["op"], field: string, value: Value): this {
    this.ops.push({ op, field, value });
    return this;
  }
  eq(field: string, value: Value) {
    return this.add("eq", field, value);
  }
  gt(field: string, value: Value) {
    return this.add("gt", field, value);
  }
  gte(field: string, value: Value) {
    return this.add("gte", field, value);
  }
  lt(field: string, value: Value) {
    return this.add("lt", field, value);
  }
  lte(field: string, value: Value) {
    return this.add("lte", field, value);
  }
}

class QueryBuilder {
  constructor(
    protected readonly executor: DatabaseExecutor,
    protected readonly spec: QuerySpec,
  ) {}

  order(order: "asc" | "desc"): QueryBuilder {
    return new QueryBuilder(this.executor, Object.assign({}, this.spec, { order }));
  }
  collect(): Promise<unknown> {
    return this.executor.query(this.spec, { kind: "collect" });
  }
  take(n: number): Promise<unknown> {
    return this.executor.query(this.spec, { kind: "take", n });
  }
  first(): Promise<unknown> {
    return this.executor.query(this.spec, { kind: "first" });
  }
  count(): Promise<unknown> {
    return this.executor.query(this.spec, { kind: "count" });
  }
  paginate(options: PaginationOptions): Promise<unknown> {
    if (typeof options !== "object" || options === null)
      throw new PlatformError(
        "bad_request",
        `paginate() needs { numItems, cursor }, got ${options === null ? "null" : typeof options}: pass the paginationOpts argument its caller sends (usePaginatedQuery does; over HTTP send { "paginationOpts": { "numItems": 20, "cursor": null } }).`,
      );
    const { cursor = null, numItems } = options;
    return this.executor.query(this.spec, { kind: "paginate", cursor, numItems });
  }
}

class TableApi extends QueryBuilder {
  constructor(
    executor: DatabaseExecutor,
    private readonly table: string,
  ) {
    super(executor, { table, index: "by_creation", range: [], order: "asc" });
  }

  get(id: string): Promise<unknown> {
    const problem = idProblem(this.table, "get", id);
    return problem ? Promise.reject(problem) : this.executor.get(this.table, id);
  }
  withIndex(index: string, range?: (q: RangeRecorder) => unknown): QueryBuilder {
    const recorder = new RangeRecorder();
    if (range) range(recorder);
    for (const op of recorder.ops) checkFinite(this.table, { [op.field]: op.value }, " in an index range");
    return new QueryBuilder(this.executor, { table: this.table, index, range: recorder.ops, order: "asc" });
  }
  // insert and update await their call rather than return it: V8's async stack traces follow
  // awaits only, and a failure's stack must reach the handler's line (the developer's terminal).
  async insert(row: unknown): Promise<string> {
    checkFinite(this.table, row);
    return await this.executor.insert(this.table, row);
  }
  async update(id: string, patch: unknown): Promise<void> {
    const problem = idProblem(this.table, "update", id);
    if (problem) throw problem;
    checkFinite(this.table, patch);
    return await this.executor.update(this.table, id, patch);
  }
  delete(id: string): Promise<void> {
    const problem = idProblem(this.table, "delete", id);
    return problem ? Promise.reject(problem) : this.executor.delete(this.table, id);
  }
}

/**
 * The prototype of every `ctx.db`: empty, frozen, and without `Object.prototype`, so a table name
 * like `constructor` or a typo never finds an inherited member. (An object created with a null
 * prototype would be a slow dictionary object; one inheriting from this stays a fast object.)
 */
const NO_MEMBERS: object = Object.freeze(Object.create(null));

/** Builds `ctx.db` for the given table names; reads are checked again on the host. */
export function createDatabaseApi(
  tables: readonly string[],
  executor: DatabaseExecutor,
): Record<string, TableApi> {
  const db = Object.create(NO_MEMBERS) as Record<string, TableApi>;
  for (const table of tables) db[table] = new TableApi(executor, table);
  return Object.freeze(db);
}
