/**
 * A deployment's database as one value, for export and import (host/transfer): its stored schema,
 * its clock and every table's rows as stored. Reading goes through one snapshot; writing builds
 * every key the deployment holds (rows, index entries and stored counts, rebuilt by the same code
 * writes and backfills use; schema; clock) so the caller can commit them in ONE batch.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { afterPrefix } from "./codec.js";
import { deploymentPrefixes, idempotencyPrefix, metaKey, rowKeyUnder, rowPrefix } from "./keys.js";
import { hasKeyUnder, type KvOperation, type KvSnapshot } from "./kv/index.js";
import { rowsOf } from "./migrate.js";
import { importQuotaExceeded, rowBytesKey } from "./row-bytes.js";
import { indexEntryValue, materialize, newIndexEntry, parseStoredRow } from "./rows.js";
import { schemaKey, schemaWrites } from "./served-schema.js";
import { compileSchema, emptySchema, type StoredSchema } from "./stored-schema.js";

/**
 * Ids of rows that have an entry in a hidden `userId()` index although they were created before its
 * `notBefore` (they were written again after the field became `userId()`), per table and index: a
 * backfill alone would leave them out, so an exact copy must name them.
 */
export type EarlyEntries = Record<string, Record<string, string[]>>;

/** Everything of a deployment's database but its rows. */
export interface DeploymentDataHead {
  schema: StoredSchema;
  /** The deployment's clock (the last `createdAt` handed out), null before its first insert. */
  clock: number | null;
  earlyEntries: EarlyEntries;
}

/** A deployment's whole database. */
export interface DeploymentData extends DeploymentDataHead {
  /** Every table's rows as stored (JSON; legacy rows keep their ISO `createdAt` strings). */
  tables: Map<string, string[]>;
}

/** Reads the schema, the clock and the early hidden-index entries of deployment `id` from `snapshot`. */
export async function readDataHead(snapshot: KvSnapshot, id: string): Promise<DeploymentDataHead> {
  const schemaJson = await snapshot.get(schemaKey(id));
  const clock = await snapshot.get(metaKey(id, "clock"));
  const schema = schemaJson ? (JSON.parse(schemaJson) as StoredSchema) : emptySchema();
  const earlyEntries: EarlyEntries = {};
  for (const [name, table] of compileSchema(id, schema)) {
    for (const [indexName, stored] of Object.entries(schema.tables[name]?.indexes ?? {})) {
      const notBefore = stored.notBefore;
      const index = table.indexes.get(indexName);
      if (notBefore === undefined || !index) continue;
      const ids: string[] = [];
      const iterator = snapshot.iterate({ gte: index.prefix, lt: index.end, keys: false });
      try {
        for (let batch = await iterator.next(1000); batch.length > 0; batch = await iterator.next(1000))
          for (const [, json] of batch) {
            const row = parseStoredRow(json);
            if (row.createdAt < notBefore) ids.push(row.id);
          }
      } finally {
        await iterator.close();
      }
      if (ids.length > 0) earlyEntries[name] = Object.assign(earlyEntries[name] ?? {}, { [indexName]: ids });
    }
  }
  return { schema, clock: clock === undefined ? null : Number(clock), earlyEntries };
}

/** The stored rows of `table` of deployment `id`, in batches, from `snapshot`. */
export function tableRows(snapshot: KvSnapshot, id: string, table: string): AsyncGenerator<string[]> {
  return rowsOf(snapshot, rowPrefix(id, table));
}

/** Whether deployment `id` has any row, read from `view` (a snapshot, or the store's latest state). */
export async function deploymentHasRows(view: Pick<KvSnapshot, "iterate">, id: string): Promise<boolean> {
  return hasKeyUnder(view, deploymentPrefixes(id)[0] as Buffer);
}

/**
 * Every key deployment `id` holds in its database (rows, index entries, counts, metadata), and
 * whether it has rows; refused (`quota_exceeded`) past `LIMITS.importOperations` keys, which a
 * replacing import would hold and delete in one batch: one developer's deployment filled to its
 * quota with small rows (some 18 million keys) ran the host out of memory (an attack review,
 * 2026-12-06).
 */
export async function existingKeys(
  snapshot: KvSnapshot,
  id: string,
): Promise<{ keys: Buffer[]; hasRows: boolean }> {
  const keys: Buffer[] = [];
  let hasRows = false;
  // Every key of the deployment but its idempotency records: they are outcomes of calls made,
  // which a retry may still ask for, and they expire on their own; counted, any client's keyed
  // mutations (a million live at 100 a second from five addresses) kept the owner from replacing.
  const idempotency = idempotencyPrefix(id);
  const ranges = deploymentPrefixes(id).flatMap((prefix) =>
    idempotency.subarray(0, prefix.length).equals(prefix)
      ? [
          { gte: prefix, lt: idempotency },
          { gte: afterPrefix(idempotency), lt: afterPrefix(prefix) },
        ]
      : [{ gte: prefix, lt: afterPrefix(prefix) }],
  );
  for (const [i, range] of ranges.entries()) {
    const iterator = snapshot.iterate({ gte: range.gte, lt: range.lt, values: false });
    try {
      for (let batch = await iterator.next(1000); batch.length > 0; batch = await iterator.next(1000)) {
        for (const [key] of batch) keys.push(key);
        if (keys.length > LIMITS.importOperations)
          throw new PlatformError(
            "quota_exceeded",
            `Deployment ${id} holds more than ${LIMITS.importOperations} keys (rows, index entries and counts), more than an import may replace at once; delete the deployment and import into it again.`,
          );
        // The first prefix is the rows'.
        if (i === 0) hasRows = true;
      }
    } finally {
      await iterator.close();
    }
  }
  return { keys, hasRows };
}

function tooManyOperations(operations: number, atLeast: boolean): PlatformError {
  return new PlatformError(
    "quota_exceeded",
    `The archive's rows, their index entries and counts are ${atLeast ? "at least " : ""}${operations} writes, past the ${LIMITS.importOperations} one import may make at once; export fewer rows (or drop indexes you do not need) and import again.`,
  );
}

/**
 * Refuses (`quota_exceeded`) an import whose rows and index entries together pass
 * `LIMITS.importOperations`, counted from the rows and the indexes before anything is built (the
 * counts they add to, one per distinct value of each counted prefix, are counted as they come).
 */
function refuseManyOperations(data: DeploymentData, tables: ReturnType<typeof compileSchema>): void {
  let operations = 0;
  for (const [name, table] of tables)
    operations += (data.tables.get(name)?.length ?? 0) * (1 + table.indexes.size);
  if (operations > LIMITS.importOperations) throw tooManyOperations(operations, false);
}

/**
 * Rows built, or keys compared, between two turns of the event loop: an import of a million
 * writes built them in one stretch of 1.8 s (and compared them with the existing keys in 0.9 s
 * more), which every other tenant's request waited for.
 */
const WORK_PER_TURN = 2000;

/**
 * Every key deployment `id` holds with `data`: each row, its entries in every index (a hidden
 * index with `notBefore` takes the rows a backfill takes, plus the early entries named), the
 * stored counts of those entries, the row bytes of rows and entries (row-bytes.ts), the schema
 * and the clock. Built a few thousand rows per turn of the event loop.
 */
export async function dataOperations(
  id: string,
  data: DeploymentData,
  /** The most row bytes it may take: past them it stops, refused, instead of building the rest. */
  rowBytesLimit = Number.POSITIVE_INFINITY,
): Promise<{ operations: KvOperation[]; rowBytes: number; schemaTag: string }> {
  const operations: KvOperation[] = [];
  const counts = new Map<string, number>();
  let rowBytes = 0;
  const tables = compileSchema(id, data.schema);
  refuseManyOperations(data, tables);
  for (const [name, table] of tables) {
    const stored = data.schema.tables[name]?.indexes ?? {};
    const early = data.earlyEntries[name] ?? {};
    const earlySets = new Map(Object.entries(early).map(([index, ids]) => [index, new Set(ids)]));
    let built = 0;
    for (const json of data.tables.get(name) ?? []) {
      if (++built % WORK_PER_TURN === 0) await nextTurn();
      const row = parseStoredRow(json);
      operations.push({ type: "put", key: rowKeyUnder(table.rowPrefix, row.id), value: json });
      rowBytes += Buffer.byteLength(json);
      // As a backfill writes them: rows stay as stored, an entry of a legacy row carries its v1 form.
      const value = indexEntryValue(json);
      const valueBytes = Buffer.byteLength(value);
      const full = materialize(table, { ...row });
      for (const index of table.indexes.values()) {
        const notBefore = stored[index.name]?.notBefore;
        if (notBefore !== undefined && row.createdAt < notBefore && !earlySets.get(index.name)?.has(row.id))
          continue;
        const entry = newIndexEntry(name, index, full);
        operations.push({ type: "put", key: entry.key, value });
        rowBytes += valueBytes;
        for (const count of entry.counts) counts.set(count, (counts.get(count) ?? 0) + 1);
      }
      if (rowBytes > rowBytesLimit) throw importQuotaExceeded(rowBytes, rowBytesLimit);
      // Every distinct value of a counted prefix is one more key: as many as the entries, or more.
      if (operations.length + counts.size > LIMITS.importOperations)
        throw tooManyOperations(operations.length + counts.size, true);
    }
  }
  for (const [name, n] of counts)
    operations.push({ type: "put", key: Buffer.from(name, "latin1"), value: String(n) });
  const schema = schemaWrites(id, data.schema);
  operations.push(...schema.operations);
  if (data.clock !== null)
    operations.push({ type: "put", key: metaKey(id, "clock"), value: String(data.clock) });
  operations.push({ type: "put", key: rowBytesKey(id), value: String(rowBytes) });
  return { operations, rowBytes, schemaTag: schema.tag };
}

/**
 * One batch that turns what deployment `id` holds (`existing`) into `writes`: every existing key
 * not written again is deleted, then the writes are put, each key once. Compared a few thousand
 * keys per turn of the event loop; nothing to compare when the deployment holds nothing.
 */
export async function replacementBatch(existing: Buffer[], writes: KvOperation[]): Promise<KvOperation[]> {
  if (existing.length === 0) return writes;
  const written = new Set<string>();
  for (const [i, op] of writes.entries()) {
    if (i % WORK_PER_TURN === WORK_PER_TURN - 1) await nextTurn();
    written.add(op.key.toString("latin1"));
  }
  const batch: KvOperation[] = [];
  for (const [i, key] of existing.entries()) {
    if (i % WORK_PER_TURN === WORK_PER_TURN - 1) await nextTurn();
    if (!written.has(key.toString("latin1"))) batch.push({ type: "del", key });
  }
  for (const op of writes) batch.push(op);
  return batch;
}
