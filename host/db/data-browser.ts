/**
 * The dashboard's reads of a deployment's data: its tables with their fields, indexes and exact
 * sizes, and pages of rows by any index range, through the same query engine handlers use
 * (range compiler, keyset pagination, sealed cursors, stored counts). They run on a snapshot
 * under a budget of their own, so they cost the app nothing and are still bounded.
 */
import type { RangeOp, RowCount, RowsAnswer, RowsQuery, TableInfo } from "../../sdk/protocol/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { CREATION_INDEX, type FieldValue, PlatformError } from "../../sdk/values/index.js";
import { afterPrefix } from "./codec.js";
import type { CursorBinding } from "./cursor.js";
import type { RunOptions } from "./group-commit-host.js";
import { countKeyOf } from "./keys.js";
import { runQuery } from "./query-terminals.js";
import { compileRange } from "./range.js";
import { parseStoredRow } from "./rows.js";
import { scanRange } from "./scan.js";
import { countKeyFor } from "./stored-counts.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";
import type { TenantDatabase } from "./tenant-database.js";
import type { Transaction } from "./transaction.js";

/** The handler name dashboard reads run as: no capsule handler can have it, so cursors never cross. */
export const DASHBOARD_HANDLER = "$dashboard";

/** A dashboard read's budget: one page of rows, the usual read limits. */
const BROWSE_BUDGET = {
  rowsReturned: LIMITS.dashboardPageRows,
  rowsRead: LIMITS.rowsRead,
  bytesRead: LIMITS.bytesRead,
  rangesRead: LIMITS.rangesRead,
  rangeBytesRead: LIMITS.rangeBytesRead,
  rowsWritten: 0,
  bytesWritten: 0,
  referencesChecked: 0,
};

type Row = Record<string, FieldValue>;

/**
 * Entries one dashboard request may walk to count, all its counts together: a legacy deployment
 * keeps no stored counts, and its table list walked up to 10,000 entries for each of up to 1,000
 * tables per request.
 */
interface WalkAllowance {
  left: number;
}

const walkAllowance = (): WalkAllowance => ({ left: LIMITS.dashboardCountScan });

/**
 * Walks `[start, end)` counting entries, at most {@link LIMITS.dashboardCountScan} and at most
 * what is `left` of the request's allowance (which it spends).
 */
async function walkCount(
  tx: Transaction,
  start: Buffer,
  end: Buffer,
  allowance: WalkAllowance = walkAllowance(),
): Promise<RowCount> {
  const most = Math.min(LIMITS.dashboardCountScan, allowance.left);
  let n = 0;
  await scanRange(
    tx.snapshot,
    tx.overlay,
    { start, end, reverse: false, values: false, keys: false, hint: 1000, want: most + 1 },
    () => ++n <= most,
  );
  allowance.left -= Math.min(n, most);
  return n > most ? { atLeast: most } : { exact: n };
}

/**
 * The number of entries of an index range: a stored count when one answers it (equalities on the
 * leading fields of a counted index, or the whole table), else a bounded walk. Read without the
 * handler budgets: the dashboard's counts are not a handler's `count()`.
 */
async function countRange(
  tx: Transaction,
  table: CompiledTable,
  index: CompiledIndex,
  range: RangeOp[],
): Promise<RowCount> {
  const compiled = compileRange(table, index, range);
  const key = countKeyFor(table, index, compiled);
  if (key) {
    const stored = await tx.readKey(key);
    return { exact: stored === null ? 0 : Number(stored) };
  }
  return walkCount(tx, compiled.start, compiled.end);
}

/** A table's size: `by_creation`'s stored count, else (legacy, or not counted yet) a bounded walk. */
async function tableSize(
  tx: Transaction,
  table: CompiledTable,
  allowance: WalkAllowance = walkAllowance(),
): Promise<RowCount> {
  const creation = table.indexes.get(CREATION_INDEX);
  if (creation?.counted) {
    const stored = await tx.readKey(countKeyOf(creation.prefix));
    return { exact: stored === null ? 0 : Number(stored) };
  }
  return walkCount(tx, table.rowPrefix, afterPrefix(table.rowPrefix), allowance);
}

/** The indexes a handler may name: `by_creation` first, then the declared ones (no hidden `$` ones). */
function queryableIndexes(table: CompiledTable): CompiledIndex[] {
  const all = [...table.indexes.values()].filter((index) => !index.name.startsWith("$"));
  return all.sort((a, b) => Number(b.name === CREATION_INDEX) - Number(a.name === CREATION_INDEX));
}

/** The incarnation of the record the caller was allowed by: the data must be its (incarnation.ts). */
type Incarnation = RunOptions["incarnation"];

/** Every table of the deployment with its fields, its queryable indexes and its exact size. */
export async function describeTables(db: TenantDatabase, incarnation?: Incarnation): Promise<TableInfo[]> {
  const describe = async (tx: Transaction) => {
    const allowance = walkAllowance();
    const out: TableInfo[] = [];
    for (const table of [...db.tables.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      out.push({
        name: table.name,
        fields: table.fieldNames.map((name) => {
          const spec = table.spec.fields[name];
          return Object.assign({ name }, spec);
        }),
        indexes: queryableIndexes(table).map((index) => ({
          name: index.name,
          fields: index.fields,
          counted: index.counted,
        })),
        rows: await tableSize(tx, table, allowance),
      });
    }
    return out;
  };
  const { value } = await db.query(describe, { incarnation });
  return value;
}

/** The whole deployment's row count (null when some table's size is only a lower bound). */
export async function totalRows(db: TenantDatabase, incarnation?: Incarnation): Promise<number | null> {
  const count = async (tx: Transaction) => {
    const allowance = walkAllowance();
    let total = 0;
    for (const table of db.tables.values()) {
      const size = await tableSize(tx, table, allowance);
      if (!("exact" in size)) return null;
      total += size.exact;
    }
    return total;
  };
  const { value } = await db.query(count, { incarnation });
  return value;
}

/** Checks the page size a caller asked for. */
function checkNumItems(numItems: number): void {
  if (!Number.isSafeInteger(numItems) || numItems < 1 || numItems > LIMITS.dashboardPageRows)
    throw new PlatformError(
      "bad_request",
      `numItems must be a whole number from 1 to ${LIMITS.dashboardPageRows}, got ${String(numItems)}.`,
    );
}

/**
 * One page of `tableName`'s rows as `query` asks (an index, an equality-then-range filter built
 * like `withIndex`, an order), through the engine's `paginate()`; the first page (no cursor) also
 * carries the range's count. A legacy deployment keeps no index entries: its rows are paged by id.
 */
export async function browseRows(
  db: TenantDatabase,
  tableName: string,
  query: RowsQuery,
  incarnation?: Incarnation,
): Promise<RowsAnswer> {
  checkNumItems(query.numItems);
  if (db.legacy) return browseLegacyRows(db, tableName, query, incarnation);
  const { value } = await db.query(
    async (tx): Promise<RowsAnswer> => {
      const table = tx.table(tableName);
      const spec = { table: table.name, index: query.index, range: query.range, order: query.order };
      const outcome = await runQuery(tx, spec, {
        kind: "paginate",
        cursor: query.cursor,
        numItems: query.numItems,
      });
      if (outcome.kind !== "page") throw new PlatformError("internal", "paginate() answered no page.");
      const answer: RowsAnswer = {
        page: outcome.page.map((json) => JSON.parse(json) as Row),
        isDone: outcome.isDone,
        continueCursor: outcome.continueCursor,
      };
      if (query.cursor === null)
        answer.count = await countRange(tx, table, tx.index(table, query.index), query.range);
      return answer;
    },
    { handler: DASHBOARD_HANDLER, argsJson: "{}", budget: BROWSE_BUDGET, incarnation },
  );
  return value;
}

/**
 * A legacy table's rows in id order (the order of its row keys), with a sealed cursor as
 * `paginate()` makes; no index and no filter, since a legacy table keeps no index entries.
 */
async function browseLegacyRows(
  db: TenantDatabase,
  tableName: string,
  query: RowsQuery,
  incarnation: Incarnation,
): Promise<RowsAnswer> {
  if (query.range.length > 0 || query.index !== CREATION_INDEX)
    throw new PlatformError(
      "bad_request",
      "A legacy (database API v0) deployment keeps no indexes: its rows can only be listed by id, unfiltered.",
    );
  const list = async (tx: Transaction): Promise<RowsAnswer> => {
    const table = tx.table(tableName);
    const reverse = query.order === "desc";
    const binding: CursorBinding = {
      deployment: db.id,
      schemaHash: db.schemaHash,
      handler: DASHBOARD_HANDLER,
      argsHash: "legacy",
      table: table.name,
      index: "$rows",
      start: "",
      end: "",
      order: query.order,
    };
    let start = table.rowPrefix;
    let end = afterPrefix(start);
    const position = query.cursor === null ? Buffer.alloc(0) : db.cursors.decode(query.cursor, binding);
    if (position.length > 0) {
      if (reverse) end = position;
      else start = Buffer.concat([position, Buffer.from([0])]);
    }
    const page: Row[] = [];
    let last: Buffer | undefined;
    let more = false;
    // A page ends early past the bytes a read may take (the rest follows by its cursor): this scan
    // runs without a handler's budget, and 100 rows of 1 MB held 100 MB per request.
    let bytes = 0;
    await scanRange(
      tx.snapshot,
      tx.overlay,
      { start, end, reverse, values: true, keys: true, hint: query.numItems + 1, want: query.numItems + 1 },
      (key, json) => {
        const rowBytes = Buffer.byteLength(json);
        if (page.length === query.numItems || (page.length > 0 && bytes + rowBytes > LIMITS.bytesRead)) {
          more = true;
          return false;
        }
        bytes += rowBytes;
        page.push(JSON.parse(json) as Row);
        last = key;
        return true;
      },
    );
    const answer: RowsAnswer = {
      page,
      isDone: !more,
      continueCursor: db.cursors.encode(last ?? position, binding),
    };
    if (query.cursor === null) answer.count = await tableSize(tx, table);
    return answer;
  };
  const { value } = await db.query(list, { incarnation });
  return value;
}

/** Row `id` of `tableName` as a handler's `get` sees it, or null. */
export async function readRow(
  db: TenantDatabase,
  tableName: string,
  id: string,
  incarnation?: Incarnation,
): Promise<Row | null> {
  const { value } = await db.query(
    async (tx) => {
      const json = await tx.get(tableName, id);
      if (json === null) return null;
      return db.legacy ? (JSON.parse(json) as Row) : (parseStoredRow(json) as Row);
    },
    { handler: DASHBOARD_HANDLER, budget: BROWSE_BUDGET, incarnation },
  );
  return value;
}
