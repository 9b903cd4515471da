import type { QuerySpec, QueryTerminal } from "../../sdk/protocol/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { type CursorBinding, hashArgs, remember } from "./cursor.js";
import { after, NOT_READY } from "./fast-path.js";
import { NO_KEY } from "./kv/index.js";
import type { KeyRange } from "./range.js";
import { indexEntryKey, materialize, materializeAll, parseStoredRow } from "./rows.js";
import { scanRange } from "./scan.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";
import type { QueryOutcome, TransactionView } from "./transaction-view.js";

/**
 * The handler's arguments without its pagination options, which change from page to page: a
 * top-level `cursor`/`numItems`, and any top-level object that carries `numItems`.
 */
function argsWithoutPagination(argsJson: string): string {
  let args: unknown;
  try {
    args = JSON.parse(argsJson);
  } catch {
    return argsJson;
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) return argsJson;
  const kept = Object.entries(args).filter(
    ([key, value]) =>
      key !== "cursor" &&
      key !== "numItems" &&
      !(typeof value === "object" && value !== null && "numItems" in value),
  );
  return JSON.stringify(kept);
}

/** Argument hashes kept, by deployment and arguments' JSON: every reader of a list's first page sends the same. */
const ARGS_HASHES_KEPT = 1024;
/** Arguments longer than this (characters) are hashed afresh every time rather than kept. */
const ARGS_KEPT_MAX_LENGTH = 2048;
const argsHashes = new Map<string, string>();

/**
 * The hash of a handler's arguments without their pagination options, kept for the arguments
 * seen last. Kept per deployment, so one tenant's timing cannot tell which arguments another sent.
 */
function paginationArgsHash(deployment: string, argsJson: string): string {
  if (argsJson.length > ARGS_KEPT_MAX_LENGTH) return hashArgs(argsWithoutPagination(argsJson));
  const kept = `${deployment}\n${argsJson}`;
  let hash = argsHashes.get(kept);
  if (hash === undefined) {
    hash = hashArgs(argsWithoutPagination(argsJson));
    remember(argsHashes, kept, hash, ARGS_HASHES_KEPT);
  }
  return hash;
}

/**
 * Each call's arguments' hash, made at its first `paginate()` (keyed by its transaction's
 * options): a handler may paginate hundreds of times, and hashing 1 MB of arguments at each took
 * the main thread 3 ms a page.
 */
const callArgsHashes = new WeakMap<object, string>();

function callArgsHash(tx: TransactionView): string {
  let hash = callArgsHashes.get(tx.options);
  if (hash === undefined) {
    hash = paginationArgsHash(tx.host.id, tx.options.argsJson ?? "null");
    callArgsHashes.set(tx.options, hash);
  }
  return hash;
}

function afterKey(key: Buffer): Buffer {
  return Buffer.concat([key, Buffer.from([0x00])]);
}

/**
 * `paginate({ numItems, cursor })`: one page of `range` after the cursor's position. The cursor is
 * sealed and bound to the deployment, schema, handler, arguments (pagination options aside) and
 * range (cursor.ts), so it cannot be replayed elsewhere; the read set covers exactly the rows seen.
 */
export function paginate(
  tx: TransactionView,
  table: CompiledTable,
  index: CompiledIndex,
  spec: QuerySpec,
  range: KeyRange,
  terminal: Extract<QueryTerminal, { kind: "paginate" }>,
): QueryOutcome | Promise<QueryOutcome> {
  const { numItems, cursor } = terminal;
  if (!Number.isSafeInteger(numItems) || numItems < 1 || numItems > LIMITS.paginateMaxItems) {
    throw new PlatformError(
      "bad_request",
      `paginate() needs numItems between 1 and ${LIMITS.paginateMaxItems}, got ${JSON.stringify(numItems) ?? String(numItems)}.`,
    );
  }
  const binding: CursorBinding = {
    deployment: tx.host.id,
    schemaHash: tx.schemaHash,
    handler: tx.options.handler ?? "",
    argsHash: callArgsHash(tx),
    table: table.name,
    index: index.name,
    start: range.start.toString("base64"),
    end: range.end.toString("base64"),
    order: spec.order,
  };
  const reverse = spec.order === "desc";
  const position =
    cursor === null || cursor === undefined ? Buffer.alloc(0) : tx.host.cursors.decode(cursor, binding);
  let { start, end } = range;
  if (position.length > 0) {
    if (reverse) end = position;
    else start = afterKey(position);
  }
  const rows: string[] = [];
  let lastKey: Buffer | null = null;
  let more = false;
  // Scanned without keys where point reads answer at once (a key buffer per row costs more than
  // the row): only the last row's key is needed, for the cursor, and it is found afterwards. Where
  // a read is a round trip (PostgreSQL), the keys come with the scan instead.
  const scan = scanRange(
    tx.snapshot,
    tx.overlay,
    {
      start,
      end,
      reverse,
      values: true,
      keys: !tx.host.syncReads,
      hint: numItems + 1,
      want: numItems + 1,
      hidden: tx.budget.hidden,
    },
    (key, value) => {
      if (rows.length === numItems) {
        more = true;
        return false;
      }
      tx.budget.read(Buffer.byteLength(value));
      rows.push(value);
      lastKey = key;
      return true;
    },
  );
  const pageEnd = after(scan, () => {
    tx.budget.returned(rows.length);
    const last = lastKey as Buffer | null;
    if (last === null || last.length > 0) return last;
    return keyOfPageEnd(tx, table, index, rows.at(-1) as string, { start, end, reverse }, rows.length);
  });
  return after(pageEnd, (last): QueryOutcome => {
    if (more && last) {
      tx.readSet.ranges.push(reverse ? { start: last, end } : { start, end: afterKey(last) });
    } else {
      tx.readSet.ranges.push({ start, end });
    }
    const nextPosition = last ?? position;
    return {
      kind: "page",
      page: materializeAll(table, rows),
      isDone: !more,
      continueCursor: tx.host.cursors.encode(nextPosition, binding),
    };
  });
}

/**
 * The index key of `value`, the last of the `count` rows a page scanned without keys. Rebuilt from
 * the row the way writes build index keys, and confirmed by reading that key from the snapshot:
 * an index key ends with its row's id, so the same value stored under it proves it is the row's
 * entry. Failing that, the range is walked again with keys up to its `count`-th entry.
 */
function keyOfPageEnd(
  tx: TransactionView,
  table: CompiledTable,
  index: CompiledIndex,
  value: string,
  range: { start: Buffer; end: Buffer; reverse: boolean },
  count: number,
): Buffer | Promise<Buffer> {
  const rebuilt = indexEntryKey(index, materialize(table, parseStoredRow(value)));
  const now = tx.snapshot.tryGetSync(rebuilt);
  return after(now === NOT_READY ? tx.snapshot.get(rebuilt) : now, (stored) => {
    if (stored === value) return rebuilt;
    let seen = 0;
    let key = NO_KEY;
    const scan = scanRange(
      tx.snapshot,
      tx.overlay,
      {
        start: range.start,
        end: range.end,
        reverse: range.reverse,
        values: false,
        keys: true,
        hint: count,
        want: count,
      },
      (entryKey) => {
        key = entryKey;
        return ++seen < count;
      },
    );
    return after(scan, () => key);
  });
}
