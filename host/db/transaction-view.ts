import type { FieldValue } from "../../sdk/values/index.js";
import type { Budget, BudgetLimits } from "./budget.js";
import type { CursorCodec } from "./cursor.js";
import type { NotReady } from "./fast-path.js";
import type { KvSnapshot } from "./kv/index.js";
import type { WriteOverlay } from "./overlay.js";
import type { ReadSet } from "./read-write-sets.js";
import type { RowBytesChange } from "./row-bytes-change.js";
import type { IndexEntry } from "./rows.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";

/** What a transaction needs from its deployment; provided by `TenantDatabase`. */
export interface TransactionHost {
  readonly id: string;
  readonly schemaHash: string;
  readonly tables: ReadonlyMap<string, CompiledTable>;
  /**
   * Whether the schema served as `tables` is gone: a migration cleared what it dropped, and a
   * reader still reading through it (past its handler's wall time) must start again.
   */
  isRetired(tables: ReadonlyMap<string, CompiledTable>): boolean;
  readonly cursors: CursorCodec;
  /** The next `createdAt`: at least `now`, strictly above every earlier one of the deployment. */
  nextCreatedAt(now: number): number;
  /** A legacy (v0) deployment: rows keep legacy `createdAt` strings; tables have no indexes. */
  readonly legacy: boolean;
  /** The store answers point reads at once (`KvSupports.syncReads`): a read after a scan is cheap. */
  readonly syncReads: boolean;
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

/** A finished writing transaction's writes; see `Transaction.seal`. */
export interface SealedWrites {
  overlay: WriteOverlay;
  writeSet: Buffer[];
  inserted: boolean;
  /** How the writes move counts, by count name; stored by the group commit (stored-counts.ts). */
  counts: ReadonlyMap<string, number> | undefined;
}

/** The result of one query terminal, rows as JSON strings (they cross into the isolate as-is). */
export type QueryOutcome =
  | { kind: "rows"; rows: string[] }
  | { kind: "row"; row: string | null }
  | { kind: "count"; count: number }
  | { kind: "page"; page: string[]; isDone: boolean; continueCursor: string };

/**
 * What the helpers of a transaction (query terminals, stored counts, row writes, host-internal
 * writes) use of it. `Transaction` implements it; the helpers take it instead of importing the class,
 * so the transaction can call them without an import cycle.
 */
export interface TransactionView {
  readonly host: TransactionHost;
  readonly snapshot: KvSnapshot;
  readonly options: TransactionOptions;
  readonly budget: Budget;
  readonly readSet: ReadSet;
  readonly overlay: WriteOverlay;
  /** The hash of the schema it reads through (the one its host served when it began). */
  readonly schemaHash: string;
  table(name: string): CompiledTable;
  index(table: CompiledTable, name: string): CompiledIndex;
  requireOpen(): void;
  requireWrite(): void;
  tryReadKeySync(key: Buffer): string | null | NotReady;
  readKey(key: Buffer): Promise<string | null>;
  pendingCountChange(name: string): number;
  noteCounts(entry: IndexEntry, delta: number): void;
  /** How the transaction's writes move the deployment's row bytes. */
  readonly rowBytes: RowBytesChange;
  insertRow(table: CompiledTable, fields: Record<string, FieldValue>, id?: string, legacy?: boolean): string;
  delete(tableName: string, id: string): Promise<void>;
}
