import { randomBytes } from "node:crypto";
import type { LegacyWrite, QuerySpec, QueryTerminal } from "../../sdk/protocol/index.js";
import { LIMITS } from "../../sdk/protocol/index.js";
import { CREATION_INDEX, isRowIdShape, PlatformError } from "../../sdk/values/index.js";
import { Budget, type BudgetLimits } from "./budget.js";
import { afterPrefix } from "./codec.js";
import { type CursorBinding, type CursorCodec, hashArgs } from "./cursor.js";
import { countKeyOf, isCountKey, rowKeyUnder } from "./keys.js";
import { type KvSnapshot, NO_KEY } from "./kv/index.js";
import { andThen, attempt, isPending, type MaybePromise } from "./maybe-sync.js";
import { WriteOverlay } from "./overlay.js";
import { compileRange, type IndexRange, type KeyRange } from "./range.js";
import { emptyReadSet, type ReadSet } from "./read-write-sets.js";
import {
  applyPatch,
  buildInsertFields,
  changedIdFields,
  type IndexEntry,
  indexEntries,
  indexEntryKey,
  materialize,
  materializeJson,
  parseStoredRow,
  type StoredRow,
} from "./rows.js";
import { scanRange } from "./scan.js";
import { type CompiledIndex, type CompiledTable, userIndexName } from "./stored-schema.js";

/** What a transaction needs from its deployment; provided by {@link DeploymentDatabase}. */
export interface TransactionHost {
  readonly id: string;
  readonly schemaHash: string;
  readonly tables: ReadonlyMap<string, CompiledTable>;
  readonly cursors: CursorCodec;
  /** The next `createdAt`: at least `now`, strictly above every earlier one of the deployment. */
  nextCreatedAt(now: number): number;
  /** A legacy (v0) deployment: rows keep legacy `createdAt` strings; tables have no indexes. */
  readonly legacy: boolean;
}

/** How a transaction runs. */
export interface TransactionOptions {
  mode: "read" | "write";
  /** The frozen "now" of the handler, for `createdAt`. */
  now?: number;
  /** Handler name and JSON arguments, which pagination cursors are bound to. */
  handler?: string;
  argsJson?: string;
  budget?: BudgetLimits;
}

/** A finished writing transaction's writes; see {@link Transaction.seal}. */
export interface SealedWrites {
  overlay: WriteOverlay;
  writeSet: Buffer[];
  inserted: boolean;
}

/** The result of one query terminal, rows as JSON strings (they cross into the isolate as-is). */
export type QueryOutcome =
  | { kind: "rows"; rows: string[] }
  | { kind: "row"; row: string | null }
  | { kind: "count"; count: number }
  | { kind: "page"; page: string[]; isDone: boolean; continueCursor: string };

const ID_BYTES = 16;
const ID_POOL_IDS = 256;
let idPool = randomBytes(ID_BYTES * ID_POOL_IDS);
let idPoolAt = 0;

/** A new row id: 128 random bits, base64url. Random bytes are drawn in bulk, once per 256 ids. */
export function newRowId(): string {
  if (idPoolAt === idPool.length) {
    idPool = randomBytes(ID_BYTES * ID_POOL_IDS);
    idPoolAt = 0;
  }
  const id = idPool.toString("base64url", idPoolAt, idPoolAt + ID_BYTES);
  idPoolAt += ID_BYTES;
  return id;
}

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

function afterKey(key: Buffer): Buffer {
  return Buffer.concat([key, Buffer.from([0x00])]);
}

/**
 * One handler's view of a deployment: an explicit snapshot, a sorted overlay of its own writes
 * (read back by its own reads), and its budgets. Nothing reaches the disk until {@link commit},
 * which writes rows, index entries and the clock as ONE atomic batch.
 */
export class Transaction {
  readonly budget: Budget;
  readonly readSet: ReadSet = emptyReadSet();
  private readonly overlay: WriteOverlay;
  private readonly now: number;
  private inserted = false;
  private finished = false;
  /**
   * Count changes noted by writes and not yet applied: entries more (or fewer) under each count,
   * by its latin1 name (see countNameOf); see flushCounts.
   */
  private countChanges: Map<string, number> | undefined;
  /** The handler's last write while it is still under way; the next write waits for it. */
  private writing: Promise<void> | undefined;

  /**
   * `base`: writes of earlier mutations of the same group commit (see {@link DeploymentDatabase}),
   * not yet in the snapshot; this transaction reads them as if they were.
   */
  constructor(
    private readonly host: TransactionHost,
    private readonly snapshot: KvSnapshot,
    private readonly options: TransactionOptions,
    base?: WriteOverlay,
  ) {
    this.overlay = base ? base.fork() : new WriteOverlay();
    this.budget = new Budget(options.budget);
    this.now = options.now ?? Date.now();
  }

  private table(name: string): CompiledTable {
    const table = typeof name === "string" ? this.host.tables.get(name) : undefined;
    if (!table) throw new PlatformError("bad_request", `Unknown table ${JSON.stringify(name)}.`);
    return table;
  }

  private index(table: CompiledTable, name: string): CompiledIndex {
    const index = typeof name === "string" && !name.startsWith("$") ? table.indexes.get(name) : undefined;
    if (!index) throw new PlatformError("bad_request", `Unknown index ${table.name}.${String(name)}.`);
    return index;
  }

  private requireOpen(): void {
    if (this.finished) throw new PlatformError("internal", "This transaction has already finished.");
  }

  private requireWrite(): void {
    this.requireOpen();
    if (this.options.mode !== "write") {
      throw new PlatformError(
        "forbidden",
        "This handler is read-only: queries and read-only endpoints cannot write.",
      );
    }
  }

  /**
   * Reads a stored row (own writes included) without touching budgets. On classic-level the point
   * read is answered synchronously from the snapshot (`getSync`): LevelDB serves it from its block
   * cache or the page cache in microseconds, and skipping the thread-pool round trip of `get()` more
   * than doubles get-by-id throughput (bench/isolates). The answer stays synchronous all the way up
   * (see maybe-sync.ts), so an inline handler's read is answered inside its entry. Scans stay
   * asynchronous.
   */
  private readRow(table: CompiledTable, id: string): MaybePromise<string | null> {
    return this.readKey(rowKeyUnder(table.rowPrefix, id));
  }

  /** {@link readRow} by the row's key. */
  private readKey(key: Buffer): MaybePromise<string | null> {
    const pending = this.overlay.get(key);
    if (pending !== undefined) return pending;
    return andThen(this.snapshot.get(key), (json) => json ?? null);
  }

  /** `ctx.db.<table>.get(id)`: the row JSON or null; one row read. Never throws synchronously. */
  get(tableName: string, id: string): MaybePromise<string | null> {
    return attempt(() => {
      this.requireOpen();
      const table = this.table(tableName);
      if (!isRowIdShape(id)) {
        if (typeof id !== "string")
          throw new PlatformError("bad_request", `get() on ${table.name} needs an id string.`);
        return null;
      }
      const key = rowKeyUnder(table.rowPrefix, id);
      this.readSet.keys.push(key);
      return andThen(this.readKey(key), (json) => {
        if (json === null) return null;
        this.budget.read(Buffer.byteLength(json));
        this.budget.returned(1);
        return materializeJson(table, json);
      });
    });
  }

  /** Runs a query terminal under the handler's budgets. */
  async query(spec: QuerySpec, terminal: QueryTerminal): Promise<QueryOutcome> {
    this.requireOpen();
    if (typeof spec !== "object" || spec === null)
      throw new PlatformError("bad_request", "A query needs a table and an index.");
    const table = this.table(spec.table);
    const index = this.index(table, spec.index);
    if (spec.order !== "asc" && spec.order !== "desc") {
      throw new PlatformError(
        "bad_request",
        `order() takes "asc" or "desc", got ${JSON.stringify(spec.order)}.`,
      );
    }
    const range = compileRange(table, index, spec.range);
    const reverse = spec.order === "desc";
    this.budget.usage.indexScans++;
    switch (terminal.kind) {
      case "count":
        return { kind: "count", count: await this.count(table, index, range) };
      case "collect":
        return { kind: "rows", rows: await this.collect(table, range, reverse) };
      case "take": {
        if (!Number.isSafeInteger(terminal.n) || terminal.n < 0) {
          throw new PlatformError(
            "bad_request",
            `take(n) needs a whole number n >= 0, got ${String(terminal.n)}.`,
          );
        }
        this.readSet.ranges.push(range);
        return { kind: "rows", rows: await this.take(table, range, reverse, terminal.n) };
      }
      case "first": {
        this.readSet.ranges.push(range);
        const rows = await this.take(table, range, reverse, 1);
        return { kind: "row", row: rows[0] ?? null };
      }
      case "paginate":
        return this.paginate(table, index, spec, range, terminal);
      default:
        throw new PlatformError("bad_request", "Unknown query terminal.");
    }
  }

  /**
   * Counts the range's entries. Equalities on leading fields of a counted index, or a whole index,
   * read the count the writes keep (see {@link countKey}), plus this transaction's own changes not
   * yet applied; any other range walks its entries. Either way each match is one row read, and a
   * count beyond the budget throws (SPEC.md).
   */
  private async count(table: CompiledTable, index: CompiledIndex, range: IndexRange): Promise<number> {
    this.readSet.ranges.push(range);
    const key = this.countKey(table, index, range);
    if (key) {
      const stored = await this.readKey(key);
      const n =
        (stored === null ? 0 : Number(stored)) + (this.countChanges?.get(key.toString("latin1")) ?? 0);
      this.budget.readKeys(n);
      return n;
    }
    const allowed = this.budget.remainingReads;
    let n = 0;
    await scanRange(
      this.snapshot,
      this.overlay,
      {
        start: range.start,
        end: range.end,
        reverse: false,
        values: false,
        keys: false,
        hint: Math.min(allowed + 1, 1000),
      },
      () => ++n <= allowed,
    );
    this.budget.readKeys(n);
    return n;
  }

  /**
   * The stored count that answers `range`, if any: equalities on leading fields of a counted
   * index, or none at all (the table's size, kept by `by_creation`).
   */
  private countKey(table: CompiledTable, index: CompiledIndex, range: IndexRange): Buffer | undefined {
    if (range.bounded || range.equalities > index.fields.length) return undefined;
    if (range.equalities === 0) {
      const creation = table.indexes.get(CREATION_INDEX);
      return creation?.counted ? countKeyOf(creation.prefix) : undefined;
    }
    return index.counted ? countKeyOf(range.start) : undefined;
  }

  private async collect(table: CompiledTable, range: KeyRange, reverse: boolean): Promise<string[]> {
    this.readSet.ranges.push(range);
    const rows: string[] = [];
    const limit = this.budget.limits.rowsReturned;
    let tooMany = false;
    await scanRange(
      this.snapshot,
      this.overlay,
      { start: range.start, end: range.end, reverse, values: true, keys: false, hint: 128 },
      (_key, value) => {
        this.budget.read(Buffer.byteLength(value));
        if (rows.length === limit) {
          tooMany = true;
          return false;
        }
        rows.push(value);
        return true;
      },
    );
    if (tooMany) throw this.budget.collectTooLarge();
    this.budget.returned(rows.length);
    return this.materializeAll(table, rows);
  }

  private async take(table: CompiledTable, range: KeyRange, reverse: boolean, n: number): Promise<string[]> {
    const rows: string[] = [];
    if (n === 0) return rows;
    await scanRange(
      this.snapshot,
      this.overlay,
      { start: range.start, end: range.end, reverse, values: true, keys: false, hint: n },
      (_key, value) => {
        this.budget.read(Buffer.byteLength(value));
        rows.push(value);
        return rows.length < n;
      },
    );
    this.budget.returned(rows.length);
    return this.materializeAll(table, rows);
  }

  private async paginate(
    table: CompiledTable,
    index: CompiledIndex,
    spec: QuerySpec,
    range: KeyRange,
    terminal: Extract<QueryTerminal, { kind: "paginate" }>,
  ): Promise<QueryOutcome> {
    const { numItems, cursor } = terminal;
    if (!Number.isSafeInteger(numItems) || numItems < 1 || numItems > LIMITS.paginateMaxItems) {
      throw new PlatformError(
        "bad_request",
        `paginate() needs numItems between 1 and ${LIMITS.paginateMaxItems}, got ${String(numItems)}.`,
      );
    }
    const binding: CursorBinding = {
      deployment: this.host.id,
      schemaHash: this.host.schemaHash,
      handler: this.options.handler ?? "",
      argsHash: hashArgs(argsWithoutPagination(this.options.argsJson ?? "null")),
      table: table.name,
      index: index.name,
      start: range.start.toString("base64"),
      end: range.end.toString("base64"),
      order: spec.order,
    };
    const reverse = spec.order === "desc";
    const position =
      cursor === null || cursor === undefined ? Buffer.alloc(0) : this.host.cursors.decode(cursor, binding);
    let { start, end } = range;
    if (position.length > 0) {
      if (reverse) end = position;
      else start = afterKey(position);
    }
    const rows: string[] = [];
    let lastKey: Buffer | null = null;
    let more = false;
    // Scanned without keys (a key buffer per row costs more than the row): only the last row's key
    // is needed, for the cursor, and it is found afterwards.
    await scanRange(
      this.snapshot,
      this.overlay,
      { start, end, reverse, values: true, keys: false, hint: numItems + 1 },
      (key, value) => {
        if (rows.length === numItems) {
          more = true;
          return false;
        }
        this.budget.read(Buffer.byteLength(value));
        rows.push(value);
        lastKey = key;
        return true;
      },
    );
    this.budget.returned(rows.length);
    let last = lastKey as Buffer | null;
    if (last !== null && last.length === 0)
      last = await this.keyOfPageEnd(
        table,
        index,
        rows.at(-1) as string,
        { start, end, reverse },
        rows.length,
      );
    if (more && last) {
      this.readSet.ranges.push(reverse ? { start: last, end } : { start, end: afterKey(last) });
    } else {
      this.readSet.ranges.push({ start, end });
    }
    const nextPosition = last ?? position;
    return {
      kind: "page",
      page: this.materializeAll(table, rows),
      isDone: !more,
      continueCursor: this.host.cursors.encode(nextPosition, binding),
    };
  }

  /**
   * The index key of `value`, the last of the `count` rows a page scanned without keys. Rebuilt from
   * the row the way writes build index keys, and confirmed by reading that key from the snapshot:
   * an index key ends with its row's id, so the same value stored under it proves it is the row's
   * entry. Failing that, the range is walked again with keys up to its `count`-th entry.
   */
  private async keyOfPageEnd(
    table: CompiledTable,
    index: CompiledIndex,
    value: string,
    range: { start: Buffer; end: Buffer; reverse: boolean },
    count: number,
  ): Promise<Buffer> {
    const rebuilt = indexEntryKey(index, materialize(table, parseStoredRow(value)));
    if ((await this.snapshot.get(rebuilt)) === value) return rebuilt;
    let seen = 0;
    let key = NO_KEY;
    await scanRange(
      this.snapshot,
      this.overlay,
      { start: range.start, end: range.end, reverse: range.reverse, values: false, keys: true, hint: count },
      (entryKey) => {
        key = entryKey;
        return ++seen < count;
      },
    );
    return key;
  }

  private materializeAll(table: CompiledTable, rows: string[]): string[] {
    return table.lateDefaults.length === 0 ? rows : rows.map((json) => materializeJson(table, json));
  }

  /** Checks that every referenced row exists (synchronously while the reads are). */
  private checkReferences(
    refs: Array<[string, string, string]>,
    tableName: string,
    from = 0,
  ): MaybePromise<void> {
    for (let i = from; i < refs.length; i++) {
      const [field, target, id] = refs[i] as [string, string, string];
      const found = this.readRow(this.table(target), id);
      const check = (json: string | null) => {
        if (json === null)
          throw new PlatformError(
            "bad_request",
            `Invalid value for ${tableName}.${field}: no row ${id} in table ${target}.`,
          );
      };
      if (isPending(found)) return found.then(check).then(() => this.checkReferences(refs, tableName, i + 1));
      check(found);
    }
  }

  /**
   * Runs one write of the handler after the ones it started before have finished. A handler may
   * start writes without awaiting each (`Promise.all` of inserts); on a store that reads
   * asynchronously (PostgreSQL) two of them would otherwise interleave between reading a row and
   * writing it back, and one would undo the other (an update's old index entry left behind). Costs
   * nothing while writes finish synchronously (classic-level).
   */
  private inTurn<T>(write: () => MaybePromise<T>): MaybePromise<T> {
    const before = this.writing;
    const result = before ? before.then(() => attempt(write)) : attempt(write);
    if (isPending(result)) {
      const done = () => {
        if (this.writing === settled) this.writing = undefined;
      };
      const settled: Promise<void> = result.then(done, done);
      this.writing = settled;
    }
    return result;
  }

  /**
   * Writes `row` and its index entries (replacing `previous`'s), and notes how the counts of the
   * entries that appear or go move (see {@link flushCounts}).
   */
  private writeRow(table: CompiledTable, row: StoredRow, previous: StoredRow | null): void {
    const json = JSON.stringify(row);
    this.overlay.set(rowKeyUnder(table.rowPrefix, row.id), json);
    const next = indexEntries(table, row);
    this.budget.usage.writes++;
    if (!previous) {
      for (const entry of next) {
        this.overlay.set(entry.key, json);
        this.moveCounts(entry, 1);
      }
      return;
    }
    const nextNames = next.map((entry) => entry.key.toString("latin1"));
    const keep = new Set(nextNames);
    const had = new Set<string>();
    for (const entry of indexEntries(table, previous)) {
      const name = entry.key.toString("latin1");
      had.add(name);
      if (keep.has(name)) continue;
      this.overlay.set(entry.key, null);
      this.moveCounts(entry, -1);
    }
    next.forEach((entry, i) => {
      this.overlay.set(entry.key, json);
      if (!had.has(nextNames[i] as string)) this.moveCounts(entry, 1);
    });
  }

  /** Removes `row` and its index entries, and notes them off their counts. */
  private removeRow(table: CompiledTable, row: StoredRow): void {
    this.overlay.set(rowKeyUnder(table.rowPrefix, row.id), null);
    for (const entry of indexEntries(table, row)) {
      this.overlay.set(entry.key, null);
      this.moveCounts(entry, -1);
    }
    this.budget.usage.writes++;
  }

  /** Notes `delta` on each count `entry` adds to; {@link flushCounts} applies the sums. */
  private moveCounts(entry: IndexEntry, delta: number): void {
    if (entry.counts.length === 0) return;
    this.countChanges ??= new Map();
    const changes = this.countChanges;
    for (const name of entry.counts) changes.set(name, (changes.get(name) ?? 0) + delta);
  }

  /**
   * Applies the count changes noted so far: each count is read once (through this transaction's
   * writes; writers are serialized, so no other writer moves it meanwhile) and written once with
   * the sum of its changes, 0 deleting it. Noting changes and applying them at the end costs one
   * read and write per distinct count instead of one per entry: a batch of inserts into one list
   * moves that list's count once. A writing handler's changes must be applied before it commits
   * ({@link seal} refuses otherwise). Synchronous while the reads are.
   */
  flushCounts(): MaybePromise<void> {
    // A write the handler started without awaiting it notes its changes when it ends.
    if (this.writing) return this.writing.then(() => this.flushCounts());
    const changes = this.countChanges;
    if (!changes || changes.size === 0) return;
    this.countChanges = undefined;
    return this.applyCounts([...changes], 0);
  }

  private applyCounts(changes: ReadonlyArray<[string, number]>, from: number): MaybePromise<void> {
    for (let i = from; i < changes.length; i++) {
      const [name, delta] = changes[i] as [string, number];
      if (delta === 0) continue;
      const key = Buffer.from(name, "latin1");
      const stored = this.readKey(key);
      const apply = (value: string | null) => {
        const n = (value === null ? 0 : Number(value)) + delta;
        this.overlay.set(key, n > 0 ? String(n) : null);
      };
      if (isPending(stored)) {
        return stored.then((value) => {
          apply(value);
          return this.applyCounts(changes, i + 1);
        });
      }
      apply(stored);
    }
  }

  /** `insert(row)`: validates, fills defaults, assigns `id` and `createdAt`; returns the id. */
  insert(tableName: string, input: unknown): MaybePromise<string> {
    return this.inTurn(() => {
      this.requireWrite();
      const table = this.table(tableName);
      const fields = buildInsertFields(table, input);
      return andThen(this.checkReferences(changedIdFields(table, fields), table.name), () => {
        const id = newRowId();
        const row = { id, createdAt: this.host.nextCreatedAt(this.now), ...fields } as StoredRow;
        this.inserted = true;
        this.writeRow(table, row, null);
        return id;
      });
    });
  }

  private existing(table: CompiledTable, id: string, verb: string): MaybePromise<StoredRow> {
    return andThen(isRowIdShape(id) ? this.readRow(table, id) : null, (json) => {
      if (json === null)
        throw new PlatformError("not_found", `Cannot ${verb}: no row ${String(id)} in table ${table.name}.`);
      // A legacy deployment keeps rows as stored; v1 reads them (and so writes them back) in v1 form.
      return this.host.legacy ? (JSON.parse(json) as StoredRow) : parseStoredRow(json);
    });
  }

  /** `update(id, patch)`: changes fields; `null` clears an optional field. */
  update(tableName: string, id: string, patch: unknown): MaybePromise<void> {
    return this.inTurn(() => {
      this.requireWrite();
      const table = this.table(tableName);
      return andThen(this.existing(table, id, "update"), (before) => {
        const after = applyPatch(table, before, patch);
        return andThen(this.checkReferences(changedIdFields(table, after, before), table.name), () =>
          this.writeRow(table, after, before),
        );
      });
    });
  }

  /** `delete(id)`: removes the row and its index entries. */
  delete(tableName: string, id: string): MaybePromise<void> {
    return this.inTurn(() => {
      this.requireWrite();
      const table = this.table(tableName);
      return andThen(this.existing(table, id, "delete"), (before) => this.removeRow(table, before));
    });
  }

  /**
   * Host-internal (guest upgrade): every row of `table` whose `userId()` field `field` equals `from`
   * gets `to` instead. Found through the field's hidden index, never a table scan; does not count
   * against the handler's budgets. Returns how many rows moved.
   */
  async reassignUserId(tableName: string, field: string, from: string, to: string): Promise<number> {
    this.requireWrite();
    const table = this.table(tableName);
    const index = table.indexes.get(userIndexName(field));
    if (!index) throw new PlatformError("internal", `${table.name}.${field} has no user index.`);
    const range = compileRange(table, index, [{ op: "eq", field, value: from }]);
    const rows: StoredRow[] = [];
    await scanRange(
      this.snapshot,
      this.overlay,
      { start: range.start, end: range.end, reverse: false, values: true, keys: false, hint: 256 },
      (_key, value) => {
        rows.push(JSON.parse(value) as StoredRow);
        return true;
      },
    );
    // biome-ignore lint/plugin: a stored row's keys are not ours to trust (Object.assign would let a "__proto__" key set the prototype); rare (guest upgrade)
    for (const before of rows) this.writeRow(table, { ...before, [field]: to } as StoredRow, before);
    return rows.length;
  }

  /**
   * Host-internal (legacy snapshot runtime): every row of a table, in key order, as stored. Each row
   * counts as read (rows and bytes shipped into the isolate are reads, SPEC.md "Versioning"), and the
   * whole table joins the read set.
   */
  async legacyTable(tableName: string): Promise<string[]> {
    this.requireOpen();
    const table = this.table(tableName);
    const start = table.rowPrefix;
    const end = afterPrefix(start);
    const rows: string[] = [];
    this.budget.usage.indexScans++;
    this.readSet.ranges.push({ start, end });
    await scanRange(
      this.snapshot,
      this.overlay,
      { start, end, reverse: false, values: true, keys: false, hint: 1000 },
      (_key, value) => {
        this.budget.read(Buffer.byteLength(value));
        rows.push(value);
        return true;
      },
    );
    return rows;
  }

  /**
   * Host-internal (legacy snapshot runtime): applies a finished legacy handler's writes. Inserts
   * may only use ids the host issued for this run (`issued`), get a host-assigned ISO `createdAt`,
   * and are validated like any insert; updates and deletes need the row to exist.
   */
  async applyLegacyWrites(writes: readonly LegacyWrite[], issued: ReadonlySet<string>): Promise<void> {
    this.requireWrite();
    if (!Array.isArray(writes)) throw new PlatformError("internal", "Malformed legacy writes.");
    for (const write of writes) {
      const table = this.table(write?.table);
      if (write.op === "insert") {
        const { id, createdAt: _ignored, ...input } = (write.row ?? {}) as Record<string, unknown>;
        if (typeof id !== "string" || !issued.has(id) || (await this.readRow(table, id)) !== null)
          throw new PlatformError("forbidden", "A legacy insert used an id the host did not issue.");
        const fields = buildInsertFields(table, input);
        await this.checkReferences(changedIdFields(table, fields), table.name);
        const createdAt = new Date(this.host.nextCreatedAt(this.now)).toISOString();
        this.inserted = true;
        this.writeRow(table, { id, createdAt, ...fields } as unknown as StoredRow, null);
      } else if (write.op === "update") {
        const before = await this.existing(table, write.id, "update");
        const after = applyPatch(table, before, write.patch);
        await this.checkReferences(changedIdFields(table, after, before), table.name);
        this.writeRow(table, after, before);
      } else if (write.op === "delete") {
        await this.delete(table.name, write.id);
      } else throw new PlatformError("internal", "Malformed legacy write.");
    }
  }

  /** Host-internal: writes a record key in the same atomic batch as this transaction. */
  writeRecord(key: Buffer, value: string): void {
    this.requireWrite();
    this.overlay.set(key, value);
  }

  /**
   * Ends a writing transaction that succeeded: its overlay (with the writes it was based on) for
   * the group's commit or the next transaction of the group, its own writes (the write set), and
   * whether it inserted (the clock must be stored with the commit).
   */
  seal(): SealedWrites {
    this.requireOpen();
    if (this.countChanges?.size)
      throw new PlatformError("internal", "A transaction was sealed before its counts were applied.");
    this.finished = true;
    // Counts change only with index entries in the same ranges, which the write set names already.
    const writeSet = this.overlay.written().filter((key) => !isCountKey(key));
    return { overlay: this.overlay, writeSet, inserted: this.inserted };
  }

  /** Drops every pending write. */
  abort(): void {
    this.finished = true;
  }
}
