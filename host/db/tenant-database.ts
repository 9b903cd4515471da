import { PlatformError } from "../../sdk/values/index.js";
import { clearAbandonedBuilds, runMigration, type SchemaSwitch } from "./backfill.js";
import { afterPrefix } from "./codec.js";
import type { CursorCodec } from "./cursor.js";
import { replaceDeploymentData } from "./data-replacement.js";
import type { DeploymentData } from "./deployment-data.js";
import { GroupCommit } from "./group-commit.js";
import { type RunOptions, type TransactionResult, withMode } from "./group-commit-host.js";
import { commitMessage, type HostMessage } from "./host-message.js";
import { deploymentPrefixes, metaKey } from "./keys.js";
import type { KvOperation, KvSnapshot, KvStore } from "./kv/index.js";
import type { MigrationProgress, MigrationReport } from "./migrate.js";
import { keepReadSetOfFailure } from "./read-write-sets.js";
import { type DatabaseQuota, DEFAULT_DATABASE_QUOTA } from "./row-bytes.js";
import { RowBytesTotal } from "./row-bytes-total.js";
import { readSnapshotOnSchema } from "./schema-readers.js";
import { ServedSchema } from "./served-schema.js";
import type { CompiledTable, StoredSchema } from "./stored-schema.js";
import { Transaction } from "./transaction.js";
import type { TransactionHost } from "./transaction-view.js";
import { WriteLock } from "./write-lock.js";

/**
 * Called after every commit with its write set (live queries subscribe here); `undefined` when a
 * commit of another process was too large to describe, meaning "anything may have changed".
 */
export type CommitListener = (writeSet: Buffer[] | undefined) => void;

/** 1/1024 ms: exactly representable at epoch-ms magnitudes, so successive createdAt stay distinct. */
const CLOCK_STEP = 1 / 1024;

/**
 * One deployment's database: its schema, its write lock and its clock. Queries run on snapshots
 * without waiting; mutations (committed in groups, see group-commit.ts) and migrations take the
 * write lock, so writes are serialized.
 */
export class TenantDatabase implements TransactionHost {
  readonly lock = new WriteLock();
  readonly clockKey: Buffer;
  /** The row bytes this deployment stores, and the most it may (row-bytes-total.ts). */
  readonly rowBytes: RowBytesTotal;
  /** The schema served, and the queries open on each (a migration clears what it dropped once they end). */
  private readonly served: ServedSchema;
  /** The last migration's clearing of the indexes it dropped. */
  private clearing: Promise<void> = Promise.resolve();
  private lastCreatedAt = 0;
  private readonly listeners = new Set<CommitListener>();
  private readonly groups: GroupCommit;
  /** Set once the deployment is deleted: a write still queued here must not recreate its keys. */
  private dropped = false;

  constructor(
    readonly store: KvStore,
    readonly id: string,
    readonly cursors: CursorCodec,
    quota: DatabaseQuota = DEFAULT_DATABASE_QUOTA,
    /** Whose share of the store's connections its work uses (`HostDatabase.shareOf`); its id by default. */
    readonly share: () => string = () => id,
  ) {
    this.clockKey = metaKey(id, "clock");
    this.served = new ServedSchema(id);
    this.rowBytes = new RowBytesTotal(id, quota.rowBytesPerDeployment);
    this.groups = new GroupCommit(this, quota.mutationWaitMs);
  }

  /**
   * The deployment's row bytes (rows and index entries), counted from what it holds and stored
   * first when not known yet. The caller holds the write lock.
   */
  storedRowBytes(): Promise<number> {
    return this.rowBytes.current(this.store, this.served.tables.values(), this.share());
  }

  get syncReads(): boolean {
    return this.store.supports.syncReads;
  }

  /** Loads schema and clock; clears index entries a crashed migration left half-built. */
  async load(): Promise<this> {
    const [clock, rowBytes, pending, tag, schema] = await this.store.getMany([
      this.clockKey,
      this.rowBytes.key,
      metaKey(this.id, "building"),
      ...this.served.keys(true),
    ]);
    if (schema) this.served.adoptRecord(schema, tag);
    this.lastCreatedAt = clock ? Number(clock) : 0;
    this.rowBytes.read(rowBytes);
    // A build in progress elsewhere (another host) is not ours to clear.
    if (pending && !this.store.supports.sharedAcrossProcesses)
      await clearAbandonedBuilds(this.store, this.id, pending);
    return this;
  }

  /**
   * Re-reads the schema and the clock, which another process sharing the store may have moved
   * (called under the cross-process write lock, and, with `keys` naming the schema, when another
   * host announces a migration). `values`: the values of `keys` (from {@link refreshKeys}), when
   * already read. Returns the row bytes record.
   */
  async refresh(keys = this.refreshKeys(), values?: Array<string | undefined>): Promise<string | undefined> {
    const read = values ?? (await this.store.getMany(keys));
    const [clock, rowBytes, ...schema] = read;
    // It had a schema and has none now: another host deleted the deployment.
    if (!(await this.served.update(this.store, schema))) this.dropped = true;
    this.lastCreatedAt = Math.max(this.lastCreatedAt, clock ? Number(clock) : 0);
    return rowBytes;
  }

  /**
   * The keys {@link refresh} reads: the clock, the row bytes, then the schema's tag, and the schema
   * itself when `whole` or while its tag is not known.
   */
  refreshKeys(whole = false): Buffer[] {
    return [this.clockKey, this.rowBytes.key, ...this.served.keys(whole)];
  }

  /** Tells this deployment's listeners about a commit (of this process or, by broadcast, another). */
  emitCommit(writeSet: Buffer[] | undefined): void {
    for (const listener of this.listeners) listener(writeSet);
  }

  /** Runs `work` holding the deployment's write lock in this process and across processes. */
  exclusive<T>(work: () => Promise<T>, mutations = false): Promise<T> {
    // Mutations' locks are taken in their developer's turn (`HostBus.inOwnerTurn`).
    if (mutations) return this.store.bus.inOwnerTurn(this.share(), () => this.exclusive(work));
    const shared = this.store.supports.sharedAcrossProcesses;
    return this.lock.run(() => {
      const keys = shared ? this.refreshKeys() : [];
      return this.store.bus.lockAcrossProcesses(
        `deployment:${this.id}`,
        async (read) => {
          // Another process may have committed since: its row bytes are read with the lock, which
          // no commit of theirs can pass now (outside the lock a read could be overtaken by ours).
          if (shared) this.rowBytes.read(await this.refresh(keys, read));
          if (this.dropped) throw new PlatformError("not_found", `Deployment ${this.id} was deleted.`);
          return work();
        },
        // The bus reads them with the lock, in the same round trip, where it can.
        shared ? { read: keys } : undefined,
      );
    });
  }

  /**
   * Deletes every row, index entry, count and metadata record of the deployment, after the writes
   * already holding the lock; writes queued behind it then fail with `not_found` instead of
   * recreating keys a new deployment with the same id would see.
   */
  drop(): Promise<void> {
    return this.lock.run(() =>
      this.store.bus.lockAcrossProcesses(`deployment:${this.id}`, async () => {
        // The row bytes are a metadata record: they go with the rest.
        for (const prefix of deploymentPrefixes(this.id))
          await this.store.clear({ gte: prefix, lt: afterPrefix(prefix) });
        this.dropped = true;
        this.rowBytes.known = undefined;
      }),
    );
  }

  /** Replaces everything the deployment stores with an import's `data` (see {@link replaceDeploymentData}). */
  replaceData(data: DeploymentData, alongside: (hasRows: boolean) => Promise<KvOperation[]>): Promise<void> {
    return replaceDeploymentData(this, data, alongside);
  }

  /**
   * Moves the clock to `clock` (an import replacing everything: see data-replacement.ts); the
   * caller holds the write lock.
   */
  resetClock(clock: number): void {
    this.lastCreatedAt = clock;
  }

  /** The deployment was deleted: writes still queued here fail with `not_found`. */
  deleted(): void {
    this.dropped = true;
  }

  /** Serves `stored` from now on; `tag`: the one it was stored with (see served-schema.ts). */
  adoptSchema(stored: StoredSchema, tag: string): void {
    this.served.adopt(stored, tag);
  }

  get schemaHash(): string {
    return this.served.schema.hash;
  }

  get tables(): ReadonlyMap<string, CompiledTable> {
    return this.served.tables;
  }

  /** The schema this deployment serves. */
  get schema(): StoredSchema {
    return this.served.schema;
  }

  /** True while the deployment serves a legacy (database API v0) schema. */
  get legacy(): boolean {
    return this.served.schema.legacy === true;
  }

  nextCreatedAt(now: number): number {
    this.lastCreatedAt = Math.max(now, this.lastCreatedAt + CLOCK_STEP);
    return this.lastCreatedAt;
  }

  clockValue(): number {
    return this.lastCreatedAt;
  }

  /** Subscribes to commits; returns the unsubscribe function. */
  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs a read-only handler on one snapshot. Never waits for writers. */
  async query<T>(
    work: (tx: Transaction) => T | Promise<T>,
    options: RunOptions = {},
  ): Promise<TransactionResult<T>> {
    const { onUsage, ...rest } = options;
    const { snapshot, tables } = await readSnapshotOnSchema(
      this.store,
      this.share(),
      () => this.served.tables,
    );
    const tx = new Transaction(this, snapshot, withMode(rest, "read"));
    this.served.enter(tables);
    try {
      const value = await work(tx);
      if (tx.budget.failure) throw tx.budget.failure;
      return { value, usage: tx.budget.usage, readSet: tx.readSet, writeSet: [] };
    } catch (error) {
      keepReadSetOfFailure(error, tx.readSet);
      throw error;
    } finally {
      onUsage?.({ ...tx.budget.usage });
      tx.abort();
      this.served.leave(tables);
      await snapshot.close();
    }
  }

  /** See {@link ServedSchema.readersEnded}. */
  readersEnded(tables: ReadonlyMap<string, CompiledTable>): Promise<void> {
    return this.served.readersEnded(tables);
  }

  /** See {@link ServedSchema.retire}. */
  retire(tables: ReadonlyMap<string, CompiledTable>): void {
    this.served.retire(tables);
  }

  isRetired(tables: ReadonlyMap<string, CompiledTable>): boolean {
    return this.served.isRetired(tables);
  }

  /**
   * Runs a writing handler: waits for the write lock, reads a snapshot taken after every earlier
   * commit, and commits its writes as one batch, together with the mutations queued beside it
   * (see {@link GroupCommit}). A throw (budget errors included) writes nothing.
   */
  mutate<T>(
    work: (tx: Transaction) => T | Promise<T>,
    options: RunOptions = {},
  ): Promise<TransactionResult<T>> {
    return new Promise<TransactionResult<unknown>>((resolve, reject) => {
      this.groups.enqueue({ work, options, resolve, reject });
    }) as Promise<TransactionResult<T>>;
  }

  /**
   * Commits `operations` on `snapshot` and tells listeners what was written; the other hosts hear
   * it from the store, with the write. With `thenRead`, answers the next snapshot, begun with the
   * commit and having read those keys (see `KvStore.commitAndContinue`).
   */
  async commitWrites(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    written: Buffer[],
    thenRead?: Buffer[],
  ): Promise<KvSnapshot | undefined> {
    const announce = this.store.supports.sharedAcrossProcesses ? commitMessage(this.id, written) : undefined;
    let next: KvSnapshot | undefined;
    try {
      if (thenRead)
        next = await this.store.commitAndContinue(snapshot, operations, announce, thenRead, this.share());
      else await this.store.commit(snapshot, operations, announce);
    } catch (error) {
      // The write may have landed all the same (its answer lost with the connection): the row
      // bytes are read again from the store, and listeners look at everything again.
      this.rowBytes.known = undefined;
      this.emitCommit(undefined);
      throw error;
    }
    this.emitCommit(written);
    return next;
  }

  /**
   * Moves the deployment to a new schema (see backfill.ts), holding the write lock; then tells the
   * other hosts on the store to reload it.
   */
  async migrate(
    spec: unknown,
    onProgress?: (progress: MigrationProgress) => void,
    options: { legacy?: boolean; switching?: SchemaSwitch } = {},
  ): Promise<MigrationReport> {
    // One migration's dropped indexes are cleared before the next begins (both record theirs).
    await this.clearing;
    const { report, clearDropped } = await this.exclusive(() =>
      runMigration(this, spec, onProgress, options),
    );
    // Outside the lock: waiting for queries begun before the switch holds no writer back. A
    // failure leaves them recorded, for the next load.
    this.clearing = clearDropped().catch(() => {});
    if (this.store.supports.sharedAcrossProcesses) {
      const message: HostMessage = { type: "schema", deployment: this.id };
      await this.store.bus.broadcast(JSON.stringify(message));
    }
    await this.clearing;
    return report;
  }
}
