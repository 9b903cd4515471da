/**
 * The legacy snapshot runtime (database API v0, docs/capsules.md "Versioning"). Legacy handlers are
 * synchronous, so everything they read must be in the isolate before they run: the host ships the
 * rows of the tables a handler touches, and a handler that touches a table not shipped yet stops
 * with a "need" answer and is run again from the start once the host shipped it (handlers are
 * deterministic: same clock, same random sequence). Writes apply to the isolate's copy, so the
 * handler reads its own writes, and go back to the host, which commits them atomically.
 */
import { type LegacyOutcome, type LegacyWrite, LIMITS } from "../sdk/protocol/index.js";
import { type FieldValue, PlatformError } from "../sdk/values/index.js";

type Row = { id: string; createdAt: string } & Record<string, FieldValue>;

function compare(x: FieldValue | undefined, y: FieldValue | undefined): number {
  if (x === y) return 0;
  if (x === undefined) return -1;
  if (y === undefined) return 1;
  return x < y ? -1 : 1;
}

/** Creation order: `createdAt` (ISO strings sort chronologically), then `id`. */
function creationOrder(a: Row, b: Row): number {
  return compare(a.createdAt, b.createdAt) || compare(a.id, b.id);
}

/** Thrown when the handler needs more than was shipped; never reaches user code's result. */
class NeedMore {
  constructor(
    readonly table?: string,
    readonly ids = 0,
  ) {}
}

/** One run of a legacy handler: the shipped tables, the id pool, the writes, the rows handed out. */
export class LegacySnapshot {
  private readonly tables: Map<string, Row[]>;
  private readonly writes: LegacyWrite[] = [];
  private returned = 0;
  private nextId = 0;
  private clock = 0;
  /** Set once the run needs more; its result is discarded even if user code caught the signal. */
  needs: NeedMore | undefined;

  constructor(
    tablesJson: string,
    private readonly ids: string[],
    private readonly known: readonly string[],
    private readonly now: number,
  ) {
    // Rows arrive in key order; handlers see them in creation order, as `by_creation` lists them.
    this.tables = new Map(
      Object.entries(JSON.parse(tablesJson) as Record<string, Row[]>).map(([table, rows]) => [
        table,
        rows.sort(creationOrder),
      ]),
    );
  }

  private need(signal: NeedMore): never {
    this.needs ??= signal;
    throw signal;
  }

  private rows(table: string): Row[] {
    const rows = this.tables.get(table);
    if (rows) return rows;
    if (!this.known.includes(table))
      throw new PlatformError("bad_request", `Unknown table ${JSON.stringify(table)}.`);
    return this.need(new NeedMore(table));
  }

  private hand<T>(rows: T[]): T[] {
    if (this.returned + rows.length > LIMITS.rowsReturned)
      throw new PlatformError(
        "limit_exceeded",
        `Database rowsReturned limit exceeded (${LIMITS.rowsReturned}).`,
      );
    this.returned += rows.length;
    return rows.map((row) => JSON.parse(JSON.stringify(row)) as T);
  }

  /** The legacy `ctx.db` over this snapshot. */
  database(): Record<string, unknown> {
    const db: Record<string, unknown> = Object.create(null);
    for (const table of this.known) db[table] = this.table(table);
    return Object.freeze(db);
  }

  private query(
    table: string,
    filters: Array<[string, FieldValue]>,
    order: [string, "asc" | "desc"] | null,
    limit: number | null,
  ) {
    const run = (): Row[] => {
      let rows = this.rows(table).filter((row) => filters.every(([field, value]) => row[field] === value));
      if (order) {
        const [field, direction] = order;
        const sign = direction === "desc" ? -1 : 1;
        // As an index orders: the field (absent first), then createdAt, then id, all one direction.
        rows = [...rows].sort((a, b) => sign * (compare(a[field], b[field]) || creationOrder(a, b)));
      }
      return limit === null ? rows : rows.slice(0, limit);
    };
    const chain = {
      where: (field: string, value: FieldValue) =>
        this.query(table, [...filters, [field, value]], order, limit),
      orderBy: (field: string, direction: "asc" | "desc" = "asc") => {
        if (direction !== "asc" && direction !== "desc")
          throw new PlatformError("bad_request", 'orderBy direction must be "asc" or "desc".');
        return this.query(table, filters, [field, direction], limit);
      },
      limit: (n: number) => {
        if (!Number.isSafeInteger(n) || n < 0)
          throw new PlatformError("bad_request", "limit(n) needs a whole number.");
        return this.query(table, filters, order, n);
      },
      all: () => this.hand(run()),
      first: () => this.hand(run().slice(0, 1))[0] ?? null,
    };
    return chain;
  }

  private table(table: string) {
    return Object.freeze({
      // biome-ignore lint/plugin: once per table a legacy handler touches
      ...this.query(table, [], null, null),
      get: (id: string) => {
        const row = this.rows(table).find((r) => r.id === id);
        return row ? (this.hand([row])[0] as Row) : null;
      },
      insert: (input: Record<string, FieldValue | null>) => {
        if (this.nextId >= this.ids.length)
          this.need(new NeedMore(undefined, Math.max(64, this.ids.length * 2)));
        const fields: Record<string, FieldValue> = {};
        for (const [key, value] of Object.entries(input ?? {})) {
          if (value === null || value === undefined) continue;
          if (typeof value === "number" && !Number.isFinite(value))
            throw new PlatformError(
              "bad_request",
              `Invalid value for ${table}.${key}: NaN and Infinity are not allowed.`,
            );
          fields[key] = value;
        }
        // Stored as legacy rows were: createdAt an ISO 8601 string, strictly after the previous insert.
        const createdAt = new Date(this.now + this.clock++).toISOString();
        // biome-ignore lint/plugin: the handler's own field names (Object.assign would let "__proto__" set the prototype)
        const row = { ...fields, id: this.ids[this.nextId++] as string, createdAt } as Row;
        this.writes.push({ op: "insert", table, row });
        this.tables.get(table)?.push(row);
        return JSON.parse(JSON.stringify(row)) as Row;
      },
      update: (id: string, patch: Record<string, FieldValue | null>) => {
        const rows = this.rows(table);
        const row = rows.find((r) => r.id === id);
        if (!row)
          throw new PlatformError("not_found", `Cannot update: no row ${String(id)} in table ${table}.`);
        for (const [key, value] of Object.entries(patch ?? {})) {
          if (value === null) delete row[key];
          else if (value !== undefined) row[key] = value;
        }
        this.writes.push({ op: "update", table, id, patch: { ...patch } });
      },
      delete: (id: string) => {
        const rows = this.rows(table);
        const at = rows.findIndex((r) => r.id === id);
        if (at < 0)
          throw new PlatformError("not_found", `Cannot delete: no row ${String(id)} in table ${table}.`);
        rows.splice(at, 1);
        this.writes.push({ op: "delete", table, id });
      },
    });
  }

  /** The outcome of the run: what it still needs, or its value, rows handed out and writes. */
  outcome(value: unknown): LegacyOutcome {
    if (this.needs) {
      const tables = this.needs.table ? [this.needs.table] : [];
      return { need: { tables, ids: this.needs.ids } };
    }
    return { value: value === undefined ? null : value, returned: this.returned, writes: this.writes };
  }

  /** True when `error` is the signal that this run needs more (or the run needed more anyway). */
  isNeed(error: unknown): boolean {
    return error instanceof NeedMore || this.needs !== undefined;
  }
}
