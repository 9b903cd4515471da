/**
 * Running a migration (docs/capsules.md "Deploys and schema changes"): the plan of migrate.ts carried out on
 * the store. New indexes are backfilled from the rows of a snapshot, with their counts; the new
 * schema is stored in one write, with the row bytes (row-bytes.ts) its built and dropped entries
 * move; then dropped indexes are cleared, without the lock, once the queries begun before the
 * switch ended. A build in progress, and the dropped indexes from the switch on, are recorded
 * under the deployment's `building` key, so a crash halfway leaves entries that the next load
 * clears. A migration is never refused for the row bytes limit: a deploy must always be able to
 * ship code that deletes.
 */
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { messageTexts } from "./host-message.js";
import { incarnationWrites } from "./incarnation.js";
import { metaKey } from "./keys.js";
import { bothFences, type KvOperation, type KvSnapshot, type KvStore, type LockFence } from "./kv/index.js";
import {
  type MigrationProgress,
  type MigrationReport,
  planMigration,
  rowsOf,
  storedIndexRanges,
} from "./migrate.js";
import type { Migrated, MigrationTarget, SchemaSwitch } from "./migration-target.js";
import { valueBytes } from "./row-bytes.js";
import { indexEntryValue, materialize, newIndexEntry, parseStoredRow } from "./rows.js";
import { schemaWrites } from "./served-schema.js";
import { type CompiledTable, compileSchema, type StoredIndex, type StoredSchema } from "./stored-schema.js";
import { TurnTaker } from "./turn-taker.js";

/** An index whose build has begun and not ended. */
interface PendingBuild {
  table: string;
  stored: StoredIndex;
  /** When it was listed (ms, the listing host's clock); records before 2026-12-06 have none. */
  listedAt?: number;
}

/**
 * How long a listed build or drop is left to the migration that listed it before another may clear
 * it: that one's queries on other hosts may still read a dropped index for a handler's wall time.
 */
const LEFT_TO_ITS_MIGRATION_MS = 4 * LIMITS.handlerWallMs;

/** How a listed build or an index is told apart: its table and storage id. */
function nameOf(table: string, storageId: string): string {
  return `${table}\u0000${storageId}`;
}

/** What `list` names (see {@link nameOf}). */
function namesOf(list: readonly PendingBuild[]): Set<string> {
  return new Set(list.map(({ table, stored }) => nameOf(table, stored.storageId)));
}

/** Count puts written per batch after a backfill. */
const COUNT_BATCH = 1000;

/** Deletes a stored index's entries and counts. */
async function clearIndex(
  store: KvStore,
  deployment: string,
  table: string,
  stored: StoredIndex,
): Promise<void> {
  for (const range of storedIndexRanges(deployment, table, stored)) await store.clear(range);
}

/** Clears the index entries a crashed migration left half-built (a build of another host is its own). */
export async function clearAbandonedBuilds(
  store: KvStore,
  deployment: string,
  pending: string,
): Promise<void> {
  for (const { table, stored } of JSON.parse(pending) as PendingBuild[])
    await clearIndex(store, deployment, table, stored);
  await store.batch([{ type: "del", key: metaKey(deployment, "building") }]);
}

/**
 * The index entries an earlier migration left listed under `building` (`listed`) that no index of
 * `next` keeps, split into those this migration clears (`old`, listed long enough ago) and those it
 * leaves listed (`young`: their own migration's clearing may be waiting for its readers still). On
 * PostgreSQL nothing clears them at load (another host may be building), so a host that died
 * mid-build, or while its dropped indexes waited for their readers, left them for good, outside
 * the row quota (an attack review, 2026-12-06). The next migration, under the same lock, clears the
 * old ones with its own dropped indexes, once readers of the schema before it end.
 */
function leftoverBuilds(
  listed: string | undefined,
  next: StoredSchema,
  now = Date.now(),
): { old: PendingBuild[]; young: PendingBuild[] } {
  if (listed === undefined) return { old: [], young: [] };
  const kept = new Set<string>();
  for (const [table, stored] of Object.entries(next.tables))
    for (const index of Object.values(stored.indexes)) kept.add(nameOf(table, index.storageId));
  const leftover = (JSON.parse(listed) as PendingBuild[]).filter(
    ({ table, stored }) => !kept.has(nameOf(table, stored.storageId)),
  );
  const young = leftover.filter(
    ({ listedAt }) => listedAt !== undefined && now - listedAt < LEFT_TO_ITS_MIGRATION_MS,
  );
  return { old: leftover.filter((build) => !young.includes(build)), young };
}

/**
 * Takes `cleared` off the `building` record, under the deployment's lock: what another migration
 * (of any host) listed since stays listed (an unconditional delete lost it; found by the fixes'
 * review).
 */
async function unlistBuilds(target: MigrationTarget, cleared: readonly PendingBuild[]): Promise<void> {
  const key = metaKey(target.id, "building");
  await target.exclusive(async (fence) => {
    const listed = await target.store.get(key);
    if (listed === undefined) return;
    const gone = namesOf(cleared);
    const left = (JSON.parse(listed) as PendingBuild[]).filter(
      ({ table, stored }) => !gone.has(nameOf(table, stored.storageId)),
    );
    await target.store.batch(
      [left.length > 0 ? { type: "put", key, value: JSON.stringify(left) } : { type: "del", key }],
      [],
      fence,
    );
  });
}

/** Writes every entry of a new index from the table's rows, then its counts; returns the entries and their bytes. */
async function backfill(
  store: KvStore,
  snapshot: KvSnapshot,
  table: CompiledTable,
  index: string,
  stored: StoredIndex,
  onProgress?: (progress: MigrationProgress) => void,
): Promise<{ entries: number; bytes: number }> {
  const compiledIndex = table.indexes.get(index)!;
  const counts = new Map<string, number>();
  let done = 0;
  let bytes = 0;
  const turns = new TurnTaker();
  for await (const rows of rowsOf(snapshot, table.rowPrefix)) {
    const batch: KvOperation[] = [];
    for (const json of rows) {
      if (turns.due()) await turns.take();
      const row = parseStoredRow(json);
      if (stored.notBefore !== undefined && row.createdAt < stored.notBefore) continue;
      // Rows stay as stored; an entry built from a legacy row carries its v1 form.
      const value = indexEntryValue(json);
      const entry = newIndexEntry(table.name, compiledIndex, materialize(table, row));
      batch.push({ type: "put", key: entry.key, value });
      bytes += Buffer.byteLength(value);
      for (const name of entry.counts) counts.set(name, (counts.get(name) ?? 0) + 1);
    }
    await store.batch(batch);
    done += rows.length;
    onProgress?.({ table: table.name, index, done });
  }
  const countPuts: KvOperation[] = [...counts].map(([name, n]) => ({
    type: "put",
    key: Buffer.from(name, "latin1"),
    value: String(n),
  }));
  for (let at = 0; at < countPuts.length; at += COUNT_BATCH)
    await store.batch(countPuts.slice(at, at + COUNT_BATCH));
  return { entries: done, bytes };
}

/**
 * Moves `target` to the schema `spec`; the caller holds the deployment's write lock, so no write
 * slips past a backfill. Reads keep being served from the old schema until the new one is stored in
 * one write. On failure nothing changes: half-built indexes are cleared.
 */
export async function runMigration(
  target: MigrationTarget,
  spec: unknown,
  onProgress?: (progress: MigrationProgress) => void,
  options: { legacy?: boolean; switching?: SchemaSwitch } = {},
  fence?: LockFence,
): Promise<Migrated> {
  const { store, id } = target;
  const snapshot = await store.snapshot(target.share(), "write");
  const building = metaKey(id, "building");
  let pending: PendingBuild[] = [];
  let leftover: PendingBuild[] = [];
  const listedAt = Date.now();
  try {
    const current = target.schema;
    if (options.legacy && !current.legacy && current.hash !== "") {
      throw new PlatformError(
        "bad_request",
        "This deployment serves database API v1; a legacy (v0) capsule cannot replace it.",
      );
    }
    const plan = await planMigration(snapshot, id, current, spec, options);
    const { old, young } = leftoverBuilds(await snapshot.get(building), plan.next, listedAt);
    leftover = [...old, ...young];
    pending = plan.build.map(({ table, stored }) => ({ table, stored, listedAt }));
    const report: MigrationReport = { built: [], dropped: [], checkedRows: plan.checkedRows };
    if (pending.length > 0)
      await store.batch(
        [{ type: "put", key: building, value: JSON.stringify([...leftover, ...pending]) }],
        [],
        fence,
      );
    // Only entries of the stored schema's indexes count: what is built and dropped moves the row
    // bytes in the batch that stores the schema.
    let rowBytes = await target.storedRowBytes(fence);
    const nextTables = compileSchema(id, plan.next);
    for (const { table, index, stored } of plan.build) {
      await clearIndex(store, id, table, stored);
      const built = await backfill(store, snapshot, nextTables.get(table)!, index, stored, onProgress);
      report.built.push({ table, index, entries: built.entries });
      rowBytes += built.bytes;
    }
    const currentTables = compileSchema(id, current);
    for (const { table, index } of plan.drop) {
      const dropped = currentTables.get(table)?.indexes.get(index);
      if (dropped) rowBytes -= await valueBytes(snapshot, dropped.prefix, dropped.end);
    }
    const dropping: PendingBuild[] = [
      ...old,
      ...plan.drop.map(({ table, stored }) => ({ table, stored, listedAt })),
    ];
    const schema = schemaWrites(id, plan.next);
    const listing = [...dropping, ...young];
    // Told in the batch, the other hosts read the new schema exactly when it commits.
    const told = messageTexts([{ type: "schema", deployment: id }, ...(options.switching?.announce ?? [])]);
    const operations: KvOperation[] = [
      ...schema.operations,
      listing.length > 0
        ? { type: "put", key: building, value: JSON.stringify(listing) }
        : { type: "del", key: building },
      { type: "put", key: target.rowBytes.key, value: String(rowBytes) },
      ...(options.switching?.operations ?? []),
      ...incarnationWrites(id, options.switching?.incarnation),
    ];
    await store.batch(operations, told, bothFences(fence, options.switching?.fence));
    pending = [];
    const before = target.tables;
    target.adoptSchema(plan.next, schema.tag);
    target.adoptIncarnation(options.switching?.incarnation);
    target.rowBytes.known = rowBytes;
    options.switching?.switched();
    report.dropped = plan.drop.map(({ table, index }) => ({ table, index }));
    const clearDropped = async () => {
      if (dropping.length === 0) return;
      // Queries begun before the switch read the dropped indexes until they end.
      await target.readersEnded(before);
      target.retire(before);
      for (const { table, stored } of dropping) await clearIndex(store, id, table, stored);
      await unlistBuilds(target, dropping);
    };
    return { report, clearDropped };
  } finally {
    try {
      for (const { table, stored } of pending) await clearIndex(store, id, table, stored);
      // Refused when the lock was lost: the list is then the next holder's to keep.
      if (pending.length > 0)
        await store.batch(
          [
            leftover.length > 0
              ? { type: "put", key: building, value: JSON.stringify(leftover) }
              : { type: "del", key: building },
          ],
          [],
          fence,
        );
    } finally {
      await snapshot.close();
    }
  }
}
