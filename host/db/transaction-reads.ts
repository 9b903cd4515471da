import { PlatformError } from "../../sdk/values/index.js";
import { Budget } from "./budget.js";
import { NOT_READY, type NotReady } from "./fast-path.js";
import type { KvSnapshot } from "./kv/index.js";
import { WriteOverlay } from "./overlay.js";
import { emptyReadSet, type ReadSet } from "./read-write-sets.js";
import { chargeRow, pointKey } from "./row-ops.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";
import type { TransactionHost, TransactionOptions } from "./transaction-view.js";

/**
 * The reading half of a `Transaction` (transaction.ts), which adds its writes: the schema it
 * began on, its snapshot under its overlay of writes, its budgets and its read set, and the point
 * reads `get` and its fast-path twin (fast-path.ts). Query terminals read through the whole
 * transaction (query-terminals.ts).
 */
export class TransactionReads {
  readonly budget: Budget;
  readonly readSet: ReadSet = emptyReadSet();
  /** This transaction's writes on top of its base's, in key order; scans merge them in. */
  readonly overlay: WriteOverlay;
  /** Set once it has finished (sealed or aborted). */
  protected finished = false;
  /**
   * The schema it reads through, as its host served it when it began: a migration switching
   * meanwhile must not point its later reads at indexes its snapshot holds half-built.
   */
  private readonly tables: ReadonlyMap<string, CompiledTable>;
  /** The hash of that schema (pagination cursors are bound to it). */
  readonly schemaHash: string;

  /** `base`: writes of earlier mutations of its group commit, read as if in the snapshot. */
  constructor(
    readonly host: TransactionHost,
    readonly snapshot: KvSnapshot,
    readonly options: TransactionOptions,
    base?: WriteOverlay,
  ) {
    this.overlay = base ? base.fork() : new WriteOverlay();
    this.tables = host.tables;
    this.schemaHash = host.schemaHash;
    this.budget = new Budget(options.budget);
  }

  /** The compiled table `name`; an unknown one is the caller's error. */
  table(name: string): CompiledTable {
    if (this.host.isRetired(this.tables))
      throw new PlatformError(
        "unavailable",
        "This deployment's schema changed while the call ran; retry it.",
      );
    const table = typeof name === "string" ? this.tables.get(name) : undefined;
    if (!table) throw new PlatformError("bad_request", `Unknown table ${JSON.stringify(name)}.`);
    return table;
  }

  /** The compiled index `name` of `table` (hidden `$` indexes are not the caller's to name). */
  index(table: CompiledTable, name: string): CompiledIndex {
    const index = typeof name === "string" && !name.startsWith("$") ? table.indexes.get(name) : undefined;
    if (!index) throw new PlatformError("bad_request", `Unknown index ${table.name}.${String(name)}.`);
    return index;
  }

  /** Throws once the transaction has finished. */
  requireOpen(): void {
    if (this.finished) throw new PlatformError("internal", "This transaction has already finished.");
  }

  /** `key` through this transaction's writes (null when absent), or NOT_READY if the store must wait. */
  tryReadKeySync(key: Buffer): string | null | NotReady {
    const pending = this.overlay.get(key);
    if (pending !== undefined) return pending;
    const stored = this.snapshot.tryGetSync(key);
    return stored === undefined ? null : stored;
  }

  /** `key` through this transaction's writes, without touching budgets; null when absent. */
  async readKey(key: Buffer): Promise<string | null> {
    const now = this.tryReadKeySync(key);
    return now !== NOT_READY ? now : ((await this.snapshot.get(key)) ?? null);
  }

  /** {@link get} answered at once, or NOT_READY. */
  tryGetSync(tableName: string, id: string): string | null | NotReady {
    this.requireOpen();
    const table = this.table(tableName);
    const key = pointKey(table, id);
    if (key === null) return null;
    const json = this.tryReadKeySync(key);
    if (json === NOT_READY) return NOT_READY;
    this.budget.lookedUp(key.length);
    this.readSet.keys.push(key);
    return chargeRow(this, table, json);
  }

  /** `ctx.db.<table>.get(id)`: the row JSON or null; one row read. */
  async get(tableName: string, id: string): Promise<string | null> {
    this.requireOpen();
    const table = this.table(tableName);
    const key = pointKey(table, id);
    if (key === null) return null;
    this.budget.lookedUp(key.length);
    this.readSet.keys.push(key);
    return chargeRow(this, table, await this.readKey(key));
  }
}
