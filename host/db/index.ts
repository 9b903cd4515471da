/**
 * `host/db`: the document database on classic-level: key codec, rows, indexes, transactions,
 * budgets, cursors, schema migration and read/write sets. No Koa, no isolates.
 */
export { Budget, type BudgetLimits, type BudgetUsage, DEFAULT_BUDGET } from "./budget.js";
export { Database } from "./database.js";
export {
  type CommitListener,
  DeploymentDatabase,
  type RunOptions,
  type TransactionResult,
} from "./deployment.js";
export type { HostMessage } from "./host-message.js";
export { ClassicKv, collect, type KvStore, PostgresKv } from "./kv/index.js";
export { andThen, attempt, isPending, type MaybePromise } from "./maybe-sync.js";
export type { MigrationProgress, MigrationReport } from "./migrate.js";
export { type ReadSet, readSetIntersects, readSetOfFailure } from "./read-write-sets.js";
export { RecordStore } from "./records.js";
export { newRowId, type QueryOutcome, Transaction } from "./transaction.js";
