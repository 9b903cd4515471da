import type { QuerySpec, QueryTerminal } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { after, isPending, NOT_READY } from "./fast-path.js";
import { paginate } from "./paginate.js";
import { compileRange, type IndexRange, type KeyRange } from "./range.js";
import { materializeAll } from "./rows.js";
import { scanRange } from "./scan.js";
import { countKeyFor } from "./stored-counts.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";
import type { QueryOutcome, TransactionView } from "./transaction-view.js";

/** Each transaction's query under way (settled either way), while one is. */
const running = new WeakMap<TransactionView, Promise<unknown>>();

/**
 * Runs a query terminal (`collect`, `take`, `first`, `count`, `paginate`) under `tx`'s budgets,
 * after the queries `tx` started before it. Budgets are charged as rows arrive, so a handler that
 * started 200 scans at once without awaiting them would have each fetch its first batch (up to
 * 1,000 rows) before any was charged: 800 MB in the host for a 4 MB budget. In turn, each starts
 * with what the others left, and none starts once a budget ran out. Answered at once (or thrown)
 * when no query of `tx` is under way and the store can answer at once (see {@link scanRange}).
 */
export function runQuery(
  tx: TransactionView,
  spec: QuerySpec,
  terminal: QueryTerminal,
): QueryOutcome | Promise<QueryOutcome> {
  const before = running.get(tx);
  const result = before
    ? before.then(() => runQueryNow(tx, spec, terminal))
    : runQueryNow(tx, spec, terminal);
  if (!isPending(result)) return result;
  const settled: Promise<unknown> = result.catch(() => {});
  running.set(tx, settled);
  void settled.then(() => {
    if (running.get(tx) === settled) running.delete(tx);
  });
  return result;
}

function runQueryNow(
  tx: TransactionView,
  spec: QuerySpec,
  terminal: QueryTerminal,
): QueryOutcome | Promise<QueryOutcome> {
  tx.requireOpen();
  if (tx.budget.failure) throw tx.budget.failure;
  if (typeof spec !== "object" || spec === null)
    throw new PlatformError("bad_request", "A query needs a table and an index.");
  const table = tx.table(spec.table);
  const index = tx.index(table, spec.index);
  if (spec.order !== "asc" && spec.order !== "desc") {
    throw new PlatformError(
      "bad_request",
      `order() takes "asc" or "desc", got ${JSON.stringify(spec.order)}.`,
    );
  }
  const range = compileRange(table, index, spec.range);
  const reverse = spec.order === "desc";
  tx.budget.scanned(range.start.length + range.end.length);
  switch (terminal.kind) {
    case "count":
      return after(count(tx, table, index, range), (n): QueryOutcome => ({ kind: "count", count: n }));
    case "collect":
      return after(collect(tx, table, range, reverse), (rows): QueryOutcome => ({ kind: "rows", rows }));
    case "take": {
      if (!Number.isSafeInteger(terminal.n) || terminal.n < 0) {
        throw new PlatformError(
          "bad_request",
          `take(n) needs a whole number n >= 0, got ${String(terminal.n)}.`,
        );
      }
      tx.readSet.ranges.push(range);
      return after(
        take(tx, table, range, reverse, terminal.n),
        (rows): QueryOutcome => ({ kind: "rows", rows }),
      );
    }
    case "first": {
      tx.readSet.ranges.push(range);
      return after(
        take(tx, table, range, reverse, 1),
        (rows): QueryOutcome => ({ kind: "row", row: rows[0] ?? null }),
      );
    }
    case "paginate":
      return paginate(tx, table, index, spec, range, terminal);
    default:
      throw new PlatformError("bad_request", "Unknown query terminal.");
  }
}

/**
 * Counts the range's entries. Equalities on leading fields of a counted index, or a whole index,
 * read the count the writes keep (stored-counts.ts), plus the transaction's own changes not yet
 * applied; any other range walks its entries. Either way each match is one row read, and a count
 * beyond the budget throws (docs/capsules.md "Read budgets").
 */
function count(
  tx: TransactionView,
  table: CompiledTable,
  index: CompiledIndex,
  range: IndexRange,
): number | Promise<number> {
  tx.readSet.ranges.push(range);
  const key = countKeyFor(table, index, range);
  if (key) {
    const now = tx.tryReadKeySync(key);
    return after(now === NOT_READY ? tx.readKey(key) : now, (stored) => {
      const n = (stored === null ? 0 : Number(stored)) + tx.pendingCountChange(key.toString("latin1"));
      tx.budget.readKeys(n);
      return n;
    });
  }
  const allowed = tx.budget.remainingReads;
  let n = 0;
  const scan = scanRange(
    tx.snapshot,
    tx.overlay,
    {
      start: range.start,
      end: range.end,
      reverse: false,
      values: false,
      keys: false,
      hint: Math.min(allowed + 1, 1000),
      want: allowed + 1,
      hidden: tx.budget.hidden,
    },
    () => ++n <= allowed,
  );
  return after(scan, () => {
    tx.budget.readKeys(n);
    return n;
  });
}

function collect(
  tx: TransactionView,
  table: CompiledTable,
  range: KeyRange,
  reverse: boolean,
): string[] | Promise<string[]> {
  tx.readSet.ranges.push(range);
  const rows: string[] = [];
  const limit = tx.budget.limits.rowsReturned;
  let tooMany = false;
  const scan = scanRange(
    tx.snapshot,
    tx.overlay,
    {
      start: range.start,
      end: range.end,
      reverse,
      values: true,
      keys: false,
      hint: 128,
      want: Infinity,
      hidden: tx.budget.hidden,
    },
    (_key, value) => {
      tx.budget.read(Buffer.byteLength(value));
      if (rows.length === limit) {
        tooMany = true;
        return false;
      }
      rows.push(value);
      return true;
    },
  );
  return after(scan, () => {
    if (tooMany) throw tx.budget.collectTooLarge();
    tx.budget.returned(rows.length);
    return materializeAll(table, rows);
  });
}

function take(
  tx: TransactionView,
  table: CompiledTable,
  range: KeyRange,
  reverse: boolean,
  n: number,
): string[] | Promise<string[]> {
  const rows: string[] = [];
  if (n === 0) return rows;
  // One more than may still be returned is enough to fail as the whole would.
  const wanted = Math.min(n, tx.budget.remainingReturns + 1);
  const scan = scanRange(
    tx.snapshot,
    tx.overlay,
    {
      start: range.start,
      end: range.end,
      reverse,
      values: true,
      keys: false,
      hint: wanted,
      want: wanted,
      hidden: tx.budget.hidden,
    },
    (_key, value) => {
      tx.budget.read(Buffer.byteLength(value));
      rows.push(value);
      return rows.length < wanted;
    },
  );
  return after(scan, () => {
    tx.budget.returned(rows.length);
    return materializeAll(table, rows);
  });
}
