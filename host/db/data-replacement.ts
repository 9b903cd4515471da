import { type DeploymentData, dataOperations, existingKeys, replacementBatch } from "./deployment-data.js";
import { type HostMessage, messageTexts } from "./host-message.js";
import { incarnationWrites } from "./incarnation.js";
import { bothFences, type FencedWork, type KvOperation, type KvStore, type LockFence } from "./kv/index.js";
import type { RowBytesTotal } from "./row-bytes-total.js";
import type { StoredSchema } from "./stored-schema.js";

/** What a replacement needs of a deployment's database (tenant-database.ts). */
export interface ReplaceableDatabase {
  readonly store: KvStore;
  readonly id: string;
  readonly rowBytes: RowBytesTotal;
  share(): string;
  exclusive<T>(work: FencedWork<T>): Promise<T>;
  adoptSchema(stored: StoredSchema, tag: string): void;
  adoptIncarnation(incarnation: string | null | undefined): void;
  resetClock(clock: number): void;
  emitCommit(writeSet: Buffer[] | undefined): void;
}

/** How a replacement's batch goes: see {@link replaceDeploymentData}. */
export interface Replacement {
  /** Told to the other hosts with the batch (the record's change). */
  announce?: HostMessage[];
  /** Whose the data is marked as (the record's: see incarnation.ts). */
  incarnation?: string | null | undefined;
  /** The fence of the lock the batch's record was made under (the lifecycle lock's): see `SchemaSwitch.fence`. */
  fence?: LockFence | undefined;
}

/**
 * Replaces everything deployment `database` stores with `data` in ONE batch, holding its write
 * lock (an import: see host/transfer). Rows that would take more than the row bytes limit are
 * refused (`quota_exceeded`), the total stored with them otherwise. `alongside` runs under the
 * lock, told whether rows exist now; it may refuse, and returns more operations for the same
 * batch (object records, the deployment's record). The other hosts hear that everything changed,
 * and `announce` (the record's change), from the batch itself; then this host's listeners. The
 * data is marked as `incarnation`'s in the same batch.
 */
export async function replaceDeploymentData(
  database: ReplaceableDatabase,
  data: DeploymentData,
  alongside: (hasRows: boolean) => Promise<KvOperation[]>,
  { announce = [], incarnation, fence: madeUnder }: Replacement = {},
): Promise<void> {
  const { store, id } = database;
  await database.exclusive(async (fence) => {
    const snapshot = await store.snapshot(database.share(), "write");
    let existing: Awaited<ReturnType<typeof existingKeys>>;
    try {
      existing = await existingKeys(snapshot, id);
    } finally {
      await snapshot.close();
    }
    const extra = await alongside(existing.hasRows);
    const { operations, rowBytes, schemaTag } = await dataOperations(id, data, database.rowBytes.limit);
    const batch = await replacementBatch(existing.keys, operations);
    for (const op of extra) batch.push(op);
    // After the replacement's deletes, which cleared the mark of the data replaced.
    for (const op of incarnationWrites(id, incarnation)) batch.push(op);
    const told: HostMessage[] = [
      { type: "schema", deployment: id },
      { type: "commit", deployment: id, all: true },
      ...announce,
    ];
    await store.batch(batch, messageTexts(told), bothFences(fence, madeUnder));
    database.adoptSchema(data.schema, schemaTag);
    database.adoptIncarnation(incarnation);
    database.resetClock(data.clock ?? 0);
    database.rowBytes.known = rowBytes;
  });
  database.emitCommit(undefined);
}
