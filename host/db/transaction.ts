import type { LegacyWrite, QuerySpec, QueryTerminal } from "../../sdk/protocol/index.js";
import { type FieldValue, isRowIdShape, PlatformError } from "../../sdk/values/index.js";
import { NOT_READY, type NotReady } from "./fast-path.js";
import { applyLegacyWrites, legacyTable, reassignUserId } from "./host-writes.js";
import { rowKeyUnder } from "./keys.js";
import type { KvSnapshot } from "./kv/index.js";
import type { WriteOverlay } from "./overlay.js";
import { runQuery } from "./query-terminals.js";
import { RowBytesChange } from "./row-bytes-change.js";
import { newRowId } from "./row-id.js";
import {
  checkReferences,
  existingRow,
  removeRow,
  tryCheckReferencesSync,
  tryExistingRowSync,
  writeRow,
} from "./row-ops.js";
import { applyPatch, buildInsertFields, changedIdFields, type IndexEntry, type StoredRow } from "./rows.js";
import type { CompiledTable } from "./stored-schema.js";
import { TransactionReads } from "./transaction-reads.js";
import type {
  QueryOutcome,
  SealedWrites,
  TransactionHost,
  TransactionOptions,
  TransactionView,
} from "./transaction-view.js";

type Fields = Record<string, FieldValue>;

/**
 * One handler's view of a deployment: a snapshot, a sorted overlay of its own writes (read back by
 * its own reads) and its budgets; the deployment commits the sealed overlay as ONE atomic batch.
 * Operations are plain async methods; point reads and writes also have a `try...Sync` twin
 * (fast-path.ts) that answers at once or returns {@link NOT_READY}, for inline handlers. Its reads
 * are {@link TransactionReads}' (transaction-reads.ts); its writes, their counts and sealing, here.
 */
export class Transaction extends TransactionReads implements TransactionView {
  private readonly now: number;
  private inserted = false;
  /** How this transaction's writes move counts, by count name (stored by its group commit: stored-counts.ts). */
  private countChanges: Map<string, number> | undefined;
  /** How this transaction's writes move the deployment's row bytes (see row-bytes.ts). */
  readonly rowBytes = new RowBytesChange();
  /** The handler's last write while it is still under way; the next write waits for it. */
  private writing: Promise<void> | undefined;

  /**
   * `base`: writes of earlier mutations of its group commit, read as if in the snapshot;
   * `baseCounts`: how they moved counts (by count name), which the snapshot does not hold yet.
   */
  constructor(
    host: TransactionHost,
    snapshot: KvSnapshot,
    options: TransactionOptions,
    base?: WriteOverlay,
    private readonly baseCounts?: Pick<ReadonlyMap<string, number>, "get">,
  ) {
    super(host, snapshot, options, base);
    this.now = options.now ?? Date.now();
  }

  /** Throws unless the transaction is open and may write. */
  requireWrite(): void {
    this.requireOpen();
    if (this.options.mode !== "write") {
      throw new PlatformError(
        "forbidden",
        "This handler is read-only: queries and read-only endpoints cannot write.",
      );
    }
  }

  /** Runs a query terminal under the handler's budgets (`runQuery` answers at once where it can). */
  async query(spec: QuerySpec, terminal: QueryTerminal): Promise<QueryOutcome> {
    return runQuery(this, spec, terminal);
  }

  private tryReadRowSync(table: CompiledTable, id: string): string | null | NotReady {
    return isRowIdShape(id) ? this.tryReadKeySync(rowKeyUnder(table.rowPrefix, id)) : null;
  }

  private readRow(table: CompiledTable, id: string): Promise<string | null> | null {
    return isRowIdShape(id) ? this.readKey(rowKeyUnder(table.rowPrefix, id)) : null;
  }

  /**
   * Runs one write of the handler after the ones it started before have finished. A handler may
   * start writes without awaiting each (`Promise.all` of inserts); on a store that reads
   * asynchronously (PostgreSQL) two of them would otherwise interleave between reading a row and
   * writing it back, and one would undo the other. The fast path never runs while one is pending.
   */
  private inTurn<T>(write: () => Promise<T>): Promise<T> {
    const result = this.writing ? this.writing.then(write) : write();
    const done = () => {
      if (this.writing === settled) this.writing = undefined;
    };
    const settled: Promise<void> = result.then(done, done);
    this.writing = settled;
    return result;
  }

  /** Stores a new row (a legacy one brings its issued id and gets an ISO `createdAt`). */
  insertRow(table: CompiledTable, fields: Fields, id = newRowId(), legacy = false): string {
    const createdAt = this.host.nextCreatedAt(this.now);
    const row = { id, createdAt: legacy ? new Date(createdAt).toISOString() : createdAt, ...fields };
    this.inserted = true;
    writeRow(this, table, row as StoredRow, null);
    return id;
  }

  /** Notes `delta` on each count `entry` adds to; {@link flushCounts} applies the sums. */
  noteCounts(entry: IndexEntry, delta: number): void {
    if (entry.counts.length === 0) return;
    this.countChanges ??= new Map();
    const changes = this.countChanges;
    for (const name of entry.counts) changes.set(name, (changes.get(name) ?? 0) + delta);
  }

  /** {@link insert} done at once, or NOT_READY. */
  tryInsertSync(tableName: string, input: unknown): string | NotReady {
    if (this.writing) return NOT_READY;
    this.requireWrite();
    const table = this.table(tableName);
    const fields = buildInsertFields(table, input);
    if (!tryCheckReferencesSync(this, changedIdFields(table, fields), table.name)) return NOT_READY;
    return this.insertRow(table, fields);
  }

  /** `insert(row)`: validates, fills defaults, assigns `id` and `createdAt`; returns the id. */
  insert(tableName: string, input: unknown): Promise<string> {
    return this.inTurn(async () => {
      this.requireWrite();
      const table = this.table(tableName);
      const fields = buildInsertFields(table, input);
      await checkReferences(this, changedIdFields(table, fields), table.name);
      return this.insertRow(table, fields);
    });
  }

  /** {@link update} done at once (true), or false when it must wait. */
  tryUpdateSync(tableName: string, id: string, patch: unknown): boolean {
    if (this.writing) return false;
    this.requireWrite();
    const table = this.table(tableName);
    const json = this.tryReadRowSync(table, id);
    if (json === NOT_READY) return false;
    const before = tryExistingRowSync(this, table, id, json, "update");
    if (before === NOT_READY) return false;
    const after = applyPatch(table, before.row, patch);
    if (!tryCheckReferencesSync(this, changedIdFields(table, after, before.row), table.name)) return false;
    writeRow(this, table, after, before);
    return true;
  }

  /** `update(id, patch)`: changes fields; `null` clears an optional field. */
  update(tableName: string, id: string, patch: unknown): Promise<void> {
    return this.inTurn(async () => {
      this.requireWrite();
      const table = this.table(tableName);
      const before = await existingRow(this, table, id, await this.readRow(table, id), "update");
      const after = applyPatch(table, before.row, patch);
      await checkReferences(this, changedIdFields(table, after, before.row), table.name);
      writeRow(this, table, after, before);
    });
  }

  /** {@link delete} done at once (true), or false when it must wait. */
  tryDeleteSync(tableName: string, id: string): boolean {
    if (this.writing) return false;
    this.requireWrite();
    const table = this.table(tableName);
    const json = this.tryReadRowSync(table, id);
    if (json === NOT_READY) return false;
    const existing = tryExistingRowSync(this, table, id, json, "delete");
    if (existing === NOT_READY) return false;
    removeRow(this, table, existing);
    return true;
  }

  /** `delete(id)`: removes the row and its index entries. */
  delete(tableName: string, id: string): Promise<void> {
    return this.inTurn(async () => {
      this.requireWrite();
      const table = this.table(tableName);
      removeRow(this, table, await existingRow(this, table, id, await this.readRow(table, id), "delete"));
    });
  }

  /** How much the writes not stored yet (this transaction's and its base's) move the count `name`. */
  pendingCountChange(name: string): number {
    return (this.countChanges?.get(name) ?? 0) + (this.baseCounts?.get(name) ?? 0);
  }

  /** Whether a write the handler started has not finished (it did not await it). */
  get writesPending(): boolean {
    return this.writing !== undefined;
  }

  /** Waits for the writes the handler started; due before {@link seal}. */
  async finishWrites(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Host-internal (guest upgrade): see {@link reassignUserId}. */
  reassignUserId(tableName: string, field: string, from: string, to: string): Promise<number> {
    return reassignUserId(this, tableName, field, from, to);
  }

  /** Host-internal (legacy snapshot runtime): see {@link legacyTable}. */
  legacyTable(tableName: string): Promise<string[]> {
    return legacyTable(this, tableName);
  }

  /** Host-internal (legacy snapshot runtime): see {@link applyLegacyWrites}. */
  applyLegacyWrites(writes: readonly LegacyWrite[], issued: ReadonlySet<string>): Promise<void> {
    return applyLegacyWrites(this, writes, issued);
  }

  /** Host-internal: writes a record key in the same atomic batch as this transaction. */
  writeRecord(key: Buffer, value: string): void {
    this.requireWrite();
    this.overlay.set(key, value);
  }

  /**
   * Ends a writing transaction that succeeded: its overlay (with its base) for the group, its own
   * writes (the write set), how they move counts, and whether it inserted (the clock is stored
   * with the commit).
   */
  seal(): SealedWrites {
    this.requireOpen();
    if (this.writing)
      throw new PlatformError("internal", "A transaction was sealed before its writes finished.");
    this.finished = true;
    // Counts are not in the overlay: they change with index entries, which the write set names.
    return {
      overlay: this.overlay,
      writeSet: this.overlay.written(),
      inserted: this.inserted,
      counts: this.countChanges,
    };
  }

  /** Drops every pending write. */
  abort(): void {
    this.finished = true;
  }
}
