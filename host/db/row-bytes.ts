/**
 * The row storage of a deployment ({@link LIMITS.rowBytesPerDeployment}): the bytes its rows and
 * their index entries hold, each row's JSON once for the row and once per index entry (an entry
 * holds a copy of its row), the measure of the write budget, so a write is charged one figure for
 * both. The total lives under the deployment's `rowBytes` metadata key and moves in the same atomic
 * batch as the rows it describes (group commits, migrations, imports), so it is exact across
 * crashes; a deployment stored before the total existed has it counted once from what it holds
 * ({@link countRowBytes}), under its write lock.
 */
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { afterPrefix } from "./codec.js";
import { NOT_READY, type NotReady } from "./fast-path.js";
import { metaKey } from "./keys.js";
import type { KvSnapshot } from "./kv/index.js";
import { indexEntryKey, indexEntryValue, materialize, type StoredRow } from "./rows.js";
import type { CompiledTable } from "./stored-schema.js";
import type { TransactionView } from "./transaction-view.js";

/** The limits of what a deployment stores, and of how long its mutations wait; tests pass smaller ones. */
export interface DatabaseQuota {
  rowBytesPerDeployment: number;
  /** See {@link LIMITS.mutationWaitMs}. */
  mutationWaitMs: number;
  /** On PostgreSQL: see {@link LIMITS.databaseSilenceMs}. */
  silenceMs: number;
}

/** The documented quota (docs/limits.md). */
export const DEFAULT_DATABASE_QUOTA: DatabaseQuota = {
  rowBytesPerDeployment: LIMITS.rowBytesPerDeployment,
  mutationWaitMs: LIMITS.mutationWaitMs,
  silenceMs: LIMITS.databaseSilenceMs,
};

/** `quota`, its fields not given (or given as undefined) taken from {@link DEFAULT_DATABASE_QUOTA}. */
export function databaseQuota(quota: Partial<DatabaseQuota> = {}): DatabaseQuota {
  return {
    rowBytesPerDeployment: quota.rowBytesPerDeployment ?? DEFAULT_DATABASE_QUOTA.rowBytesPerDeployment,
    mutationWaitMs: quota.mutationWaitMs ?? DEFAULT_DATABASE_QUOTA.mutationWaitMs,
    silenceMs: quota.silenceMs ?? DEFAULT_DATABASE_QUOTA.silenceMs,
  };
}

/** The key of `deployment`'s row bytes (a decimal number). */
export function rowBytesKey(deployment: string): Buffer {
  return metaKey(deployment, "rowBytes");
}

/** The row bytes a stored total says; undefined when none is stored (not counted yet). */
export function parseRowBytes(stored: string | undefined): number | undefined {
  return stored === undefined ? undefined : Number(stored);
}

/** Bytes a write of row `json` with `entries` index entries stores: what the budget and the total both take. */
export function writtenBytes(json: string, entries: number): number {
  return Buffer.byteLength(json) * (1 + entries);
}

/** Bytes stored row `json` holds with `entries` index entries, each holding {@link indexEntryValue}. */
function heldBytes(json: string, entries: number): number {
  const bytes = Buffer.byteLength(json);
  if (entries === 0) return bytes;
  const value = indexEntryValue(json);
  return bytes + entries * (value === json ? bytes : Buffer.byteLength(value));
}

/**
 * Keys of the entries stored row `row` may lack: those of hidden indexes it predates (`notBefore`),
 * which a backfill leaves out until the row is written again. Almost always none.
 */
function uncertainEntries(table: CompiledTable, row: StoredRow): Buffer[] {
  const keys: Buffer[] = [];
  let full: StoredRow | undefined;
  for (const index of table.indexes.values())
    if (index.notBefore !== undefined && row.createdAt < index.notBefore) {
      full ??= materialize(table, { ...row });
      keys.push(indexEntryKey(index, full));
    }
  return keys;
}

/**
 * The bytes stored row `json` (`row` parsed) of `table` holds with its index entries, as `tx` sees
 * them, or NOT_READY when an entry that may be missing must be read from the store.
 */
export function tryHeldBytesSync(
  tx: TransactionView,
  table: CompiledTable,
  json: string,
  row: StoredRow,
): number | NotReady {
  let entries = table.indexes.size;
  for (const key of uncertainEntries(table, row)) {
    const value = tx.tryReadKeySync(key);
    if (value === NOT_READY) return NOT_READY;
    if (value === null) entries--;
  }
  return heldBytes(json, entries);
}

/** {@link tryHeldBytesSync}, reading from the store when it must. */
export async function heldBytesOf(
  tx: TransactionView,
  table: CompiledTable,
  json: string,
  row: StoredRow,
): Promise<number> {
  let entries = table.indexes.size;
  for (const key of uncertainEntries(table, row)) if ((await tx.readKey(key)) === null) entries--;
  return heldBytes(json, entries);
}

/** The bytes of every value in `[gte, lt)` of `snapshot`. */
export async function valueBytes(
  snapshot: Pick<KvSnapshot, "iterate">,
  gte: Buffer,
  lt: Buffer,
): Promise<number> {
  const iterator = snapshot.iterate({ gte, lt, keys: false });
  let total = 0;
  try {
    for (let batch = await iterator.next(1000); batch.length > 0; batch = await iterator.next(1000))
      for (const [, value] of batch) total += Buffer.byteLength(value);
  } finally {
    await iterator.close();
  }
  return total;
}

/**
 * The row bytes of a deployment counted from scratch: every value stored under the rows and the
 * index entries of `tables` (its schema's; entries a migration left behind are not its).
 */
export async function countRowBytes(
  snapshot: Pick<KvSnapshot, "iterate">,
  tables: Iterable<CompiledTable>,
): Promise<number> {
  let total = 0;
  for (const table of tables) {
    total += await valueBytes(snapshot, table.rowPrefix, afterPrefix(table.rowPrefix));
    for (const index of table.indexes.values()) total += await valueBytes(snapshot, index.prefix, index.end);
  }
  return total;
}

/** A byte count in the largest binary unit that keeps it at 1 or more (`1.00 GiB`). */
export function inBinaryUnits(bytes: number): string {
  const units = ["KiB", "MiB", "GiB", "TiB"];
  if (bytes < 1024) return `${bytes} bytes`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(2)} ${units[unit]}`;
}

/** `413 quota_exceeded` for a mutation that would add `adding` bytes to `stored`, past `limit`. */
export function rowQuotaExceeded(stored: number, adding: number, limit: number): PlatformError {
  return new PlatformError(
    "quota_exceeded",
    `This deployment stores ${inBinaryUnits(stored)} of rows and this mutation would add ${inBinaryUnits(adding)}, past its limit of ${inBinaryUnits(limit)}; delete rows to store more.`,
  );
}

/** `413 quota_exceeded` for an import whose rows take `bytes`, past `limit`. */
export function importQuotaExceeded(bytes: number, limit: number): PlatformError {
  return new PlatformError(
    "quota_exceeded",
    `The archive's rows take ${inBinaryUnits(bytes)} with their index entries, past this deployment's limit of ${inBinaryUnits(limit)}; delete rows before exporting, or import into a host with a larger limit.`,
  );
}
