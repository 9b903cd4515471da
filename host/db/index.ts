/**
 * `host/db`: the document database over a key-value store (classic-level or PostgreSQL, see kv/):
 * per-deployment stores with group commit, transactions (with their one synchronous fast path),
 * query terminals and cursors, stored counts, budgets, the row storage quota, schema migration and
 * read/write sets.
 * No Koa, no isolates.
 */
export {
  Budget,
  type BudgetLimits,
  type BudgetUsage,
  DEFAULT_BUDGET,
  noUsage,
  UNLIMITED_BUDGET,
} from "./budget.js";
export { browseRows, DASHBOARD_HANDLER, describeTables, readRow, totalRows } from "./data-browser.js";
export {
  type DeploymentData,
  type DeploymentDataHead,
  deploymentHasRows,
  type EarlyEntries,
  readDataHead,
  tableRows,
} from "./deployment-data.js";
export { after, isPending, NOT_READY, type NotReady } from "./fast-path.js";
export type { RunOptions, TransactionResult } from "./group-commit-host.js";
export { HostDatabase } from "./host-database.js";
export type { HostMessage } from "./host-message.js";
export { checkImportedRow, checkImportedSchema } from "./imported-data.js";
export { incarnationKey, replacedError, servesIncarnation } from "./incarnation.js";
export {
  everyKey,
  idempotencyPrefix,
  idempotencyRecordKey,
  idempotencyWindowPrefix,
} from "./keys.js";
export {
  bothFences,
  ClassicKv,
  collect,
  type FencedWork,
  type IfFree,
  type KvOperation,
  type KvSnapshot,
  type KvStore,
  type LockFence,
  PostgresKv,
  refusedForLostLock,
} from "./kv/index.js";
export type { MigrationProgress, MigrationReport } from "./migrate.js";
export { runQuery } from "./query-terminals.js";
export { emptyReadSet, type ReadSet, readSetIntersects, readSetOfFailure } from "./read-write-sets.js";
export { RecordStore } from "./records.js";
export { type DatabaseQuota, DEFAULT_DATABASE_QUOTA } from "./row-bytes.js";
export { newRowId } from "./row-id.js";
export type { StoredSchema } from "./stored-schema.js";
export { type CommitListener, TenantDatabase } from "./tenant-database.js";
export { Transaction } from "./transaction.js";
export type { QueryOutcome } from "./transaction-view.js";
export { NamedLocks, WriteLock } from "./write-lock.js";
