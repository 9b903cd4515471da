/**
 * What a group commit (group-commit.ts) deals in: a run's options and outcome, a queued mutation,
 * and what it needs of its deployment's database.
 */
import type { BudgetLimits, BudgetUsage } from "./budget.js";
import type { FencedWork, KvOperation, KvSnapshot, KvStore, LockFence } from "./kv/index.js";
import type { ReadSet } from "./read-write-sets.js";
import type { RowBytesTotal } from "./row-bytes-total.js";
import type { Transaction } from "./transaction.js";
import type { TransactionHost, TransactionOptions } from "./transaction-view.js";
import type { WriteLock } from "./write-lock.js";

/** The outcome of a handler run in a transaction. */
export interface TransactionResult<T> {
  value: T;
  usage: BudgetUsage;
  readSet: ReadSet;
  /** Keys the commit wrote (empty for queries and failed mutations). */
  writeSet: Buffer[];
}

/** Options of a query or mutation run (`TenantDatabase.query` and `.mutate`). */
export type RunOptions = Omit<TransactionOptions, "mode"> & {
  budget?: BudgetLimits;
  /** Receives what the handler used, whether it succeeded or failed (logs, the budget harness). */
  onUsage?: (usage: BudgetUsage) => void;
  /** Keys a mutation reads before its handler runs (its session): its group reads them ahead. */
  reads?: readonly Buffer[] | undefined;
  /**
   * The incarnation of the deployment the caller's code belongs to (its record's; null for one
   * created before incarnations existed): the run is refused (`not_found`) when the data belongs
   * to another, created under the id since (incarnation.ts). Undefined for the host's own work.
   */
  incarnation?: string | null | undefined;
};

/** A run's transaction options (`Object.assign`: a spread-first literal is slow on V8). */
export function withMode(
  options: Omit<RunOptions, "onUsage">,
  mode: TransactionOptions["mode"],
): TransactionOptions {
  return Object.assign({ mode }, options);
}

/** A mutation waiting for its group. */
export interface QueuedMutation {
  work: (tx: Transaction) => unknown;
  options: RunOptions;
  resolve: (result: TransactionResult<unknown>) => void;
  reject: (error: unknown) => void;
}

/** What a group commit needs of its deployment's database. */
export interface GroupCommitHost extends TransactionHost {
  readonly store: KvStore;
  /** Whose share of the store's connections the deployment's work uses (see `HostDatabase.shareOf`). */
  share(): string;
  readonly clockKey: Buffer;
  clockValue(): number;
  /**
   * Runs `work` holding the deployment's write lock in this process and across processes;
   * `mutations` when it runs mutations (see `HostBus.inOwnerTurn`).
   */
  exclusive<T>(work: FencedWork<T>, mutations?: boolean): Promise<T>;
  /** The in-process write lock: contended while other work waits for it (a drop, an import, a migration). */
  readonly lock: Pick<WriteLock, "contended">;
  /**
   * Commits `operations` on `snapshot` and tells listeners what was written; with `thenRead`,
   * answers the next snapshot, begun with the commit and having read those keys (none when it
   * could not begin: the next group then begins its own).
   */
  commitWrites(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    written: Buffer[],
    thenRead?: Buffer[],
    fence?: LockFence,
  ): Promise<KvSnapshot | undefined>;
  /** The deployment's row bytes and their limit (row-bytes-total.ts), under the write lock. */
  readonly rowBytes: RowBytesTotal;
  /** The row bytes, counted and stored first when not known. */
  storedRowBytes(fence?: LockFence): Promise<number>;
}
