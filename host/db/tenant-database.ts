import { PlatformError } from "../../sdk/values/index.js";
import { runMigration } from "./backfill.js";
import { afterPrefix } from "./codec.js";
import type { CursorCodec } from "./cursor.js";
import { type Replacement, replaceDeploymentData } from "./data-replacement.js";
import type { DeploymentData } from "./deployment-data.js";
import { DeploymentMeta } from "./deployment-meta.js";
import { GroupCommit } from "./group-commit.js";
import { type RunOptions, type TransactionResult, withMode } from "./group-commit-host.js";
import { commitMessage } from "./host-message.js";
import { IncarnationSnapshot } from "./incarnation.js";
import { deploymentPrefixes } from "./keys.js";
import {
  bothFences,
  type FencedWork,
  type KvOperation,
  type KvSnapshot,
  type KvStore,
  type LockFence,
  refusedForLostLock,
} from "./kv/index.js";
import type { MigrationProgress, MigrationReport } from "./migrate.js";
import type { SchemaSwitch } from "./migration-target.js";
import { keepReadSetOfFailure } from "./read-write-sets.js";
import { type DatabaseQuota, DEFAULT_DATABASE_QUOTA } from "./row-bytes.js";
import { readSnapshotOnSchema } from "./schema-readers.js";
import { Transaction } from "./transaction.js";
import type { TransactionHost } from "./transaction-view.js";
import { WriteLock } from "./write-lock.js";

/**
 * Called after every commit with its write set (live queries subscribe here); `undefined` when a
 * commit of another process was too large to describe, meaning "anything may have changed".
 */
export type CommitListener = (writeSet: Buffer[] | undefined) => void;

/**
 * One deployment's database: its write lock, and its schema, clock and row bytes (kept by
 * {@link DeploymentMeta}, deployment-meta.ts). Queries run on snapshots without waiting; mutations
 * (committed in groups, see group-commit.ts) and migrations take the write lock, so writes are
 * serialized.
 */
export class TenantDatabase extends DeploymentMeta implements TransactionHost {
  readonly lock = new WriteLock();
  /** The last migration's clearing of the indexes it dropped. */
  private clearing: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<CommitListener>();
  private readonly groups: GroupCommit;

  constructor(
    store: KvStore,
    id: string,
    readonly cursors: CursorCodec,
    quota: DatabaseQuota = DEFAULT_DATABASE_QUOTA,
    /** Whose share of the store's connections its work uses (`HostDatabase.shareOf`); its id by default. */
    share: () => string = () => id,
    /** Told when its data turned out to be another incarnation's (see `DeploymentMeta`). */
    moved?: () => void,
  ) {
    super(store, id, quota, share, moved);
    this.groups = new GroupCommit(this, quota.mutationWaitMs);
  }

  get syncReads(): boolean {
    return this.store.supports.syncReads;
  }

  /** Tells this deployment's listeners about a commit (of this process or, by broadcast, another). */
  emitCommit(writeSet: Buffer[] | undefined): void {
    for (const listener of this.listeners) listener(writeSet);
  }

  /**
   * Runs `work` holding the deployment's write lock in this process and across processes; `work`
   * gets the lock's fence, if the store's locks have one, to pass with its writes (lock-fence.ts).
   */
  exclusive<T>(work: FencedWork<T>, mutations = false): Promise<T> {
    // Mutations' locks are taken in their developer's turn (`HostBus.inOwnerTurn`).
    if (mutations) return this.store.bus.inOwnerTurn(this.share(), () => this.exclusive(work));
    const shared = this.store.supports.sharedAcrossProcesses;
    return this.lock.run(() => {
      const keys = shared ? this.refreshKeys() : [];
      return this.store.bus.lockAcrossProcesses(
        `deployment:${this.id}`,
        async (read, fence) => {
          // Another process may have committed since: its row bytes are read with the lock, which
          // no commit of theirs can pass now (outside the lock a read could be overtaken by ours),
          // and so is the incarnation, which nobody changes without the lock.
          if (shared) {
            const { rowBytes, incarnation } = await this.refresh(keys, read);
            this.rowBytes.read(rowBytes);
            this.held = incarnation;
          }
          if (this.dropped) throw new PlatformError("not_found", `Deployment ${this.id} was deleted.`);
          return work(fence);
        },
        // The bus reads them with the lock, in the same round trip, where it can.
        shared ? { read: keys } : undefined,
      );
    });
  }

  /**
   * Deletes every row, index entry, count and metadata record of the deployment, after the writes
   * already holding the lock; writes queued behind it then fail with `not_found` instead of
   * recreating keys a new deployment with the same id would see. `lifecycle`: the fence of the
   * deployment's lifecycle lock, under which the removal was decided: each clear lands only while
   * both locks are held (another host may have finished the removal, and created the id anew).
   */
  drop(lifecycle?: LockFence): Promise<void> {
    return this.lock.run(() =>
      this.store.bus.lockAcrossProcesses(`deployment:${this.id}`, async (_read, fence) => {
        const both = bothFences(fence, lifecycle);
        // The row bytes are a metadata record: they go with the rest.
        for (const prefix of deploymentPrefixes(this.id))
          await this.store.clear({ gte: prefix, lt: afterPrefix(prefix) }, both);
        this.cleared();
        this.rowBytes.known = undefined;
      }),
    );
  }

  /** Replaces everything the deployment stores with an import's `data` (see {@link replaceDeploymentData}). */
  replaceData(
    data: DeploymentData,
    alongside: (hasRows: boolean) => Promise<KvOperation[]>,
    replacement?: Replacement,
  ): Promise<void> {
    return replaceDeploymentData(this, data, alongside, replacement);
  }

  /** Subscribes to commits; returns the unsubscribe function. */
  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Runs a read-only handler on one snapshot. Never waits for writers. With `options.incarnation`,
   * the snapshot answers only once it found the data to be that incarnation's (incarnation.ts).
   */
  async query<T>(
    work: (tx: Transaction) => T | Promise<T>,
    options: RunOptions = {},
  ): Promise<TransactionResult<T>> {
    const { onUsage, incarnation, ...rest } = options;
    const { snapshot, tables } = await readSnapshotOnSchema(
      this.store,
      this.share(),
      () => this.served.tables,
    );
    const checked =
      incarnation === undefined
        ? undefined
        : new IncarnationSnapshot(snapshot, this.id, incarnation, () => this.moved());
    const tx = new Transaction(this, checked ?? snapshot, withMode(rest, "read"));
    this.served.enter(tables);
    try {
      const value = await work(tx);
      if (checked?.failure) throw checked.failure;
      if (tx.budget.failure) throw tx.budget.failure;
      return { value, usage: tx.budget.usage, readSet: tx.readSet, writeSet: [] };
    } catch (error) {
      keepReadSetOfFailure(error, tx.readSet);
      throw checked?.failure ?? error;
    } finally {
      onUsage?.({ ...tx.budget.usage });
      tx.abort();
      this.served.leave(tables);
      await snapshot.close();
    }
  }

  /**
   * Runs a writing handler: waits for the write lock, reads a snapshot taken after every earlier
   * commit, and commits its writes as one batch, together with the mutations queued beside it
   * (see {@link GroupCommit}). A throw (budget errors included) writes nothing. With
   * `options.incarnation`, refused when the data belongs to another incarnation (incarnation.ts).
   */
  mutate<T>(
    work: (tx: Transaction) => T | Promise<T>,
    options: RunOptions = {},
  ): Promise<TransactionResult<T>> {
    const expected = options.incarnation;
    // Checked as it runs, holding the write lock: the data is the incarnation's until it lets go.
    const checked =
      expected === undefined
        ? work
        : (tx: Transaction) => {
            this.requireIncarnation(expected);
            return work(tx);
          };
    return new Promise<TransactionResult<unknown>>((resolve, reject) => {
      this.groups.enqueue({ work: checked, options, resolve, reject });
    }) as Promise<TransactionResult<T>>;
  }

  /**
   * Commits `operations` on `snapshot` and tells listeners what was written; the other hosts hear
   * it from the store, with the write. With `thenRead`, answers the next snapshot, begun with the
   * commit and having read those keys (see `KvStore.commitAndContinue`). With `fence` (the write
   * lock's, see {@link exclusive}), nothing lands once that lock is lost.
   */
  async commitWrites(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    written: Buffer[],
    thenRead?: Buffer[],
    fence?: LockFence,
  ): Promise<KvSnapshot | undefined> {
    const announce = this.store.supports.sharedAcrossProcesses ? commitMessage(this.id, written) : undefined;
    let next: KvSnapshot | undefined;
    try {
      if (thenRead)
        next = await this.store.commitAndContinue(
          snapshot,
          operations,
          announce,
          thenRead,
          this.share(),
          fence,
        );
      else await this.store.commit(snapshot, operations, announce, fence);
    } catch (error) {
      // The write may have landed all the same (its answer lost with the connection): the row
      // bytes are read again from the store, and listeners look at everything again. Not when it
      // certainly wrote nothing (its lock was lost: the next taking reads the row bytes anew).
      if (!refusedForLostLock(error)) {
        this.rowBytes.known = undefined;
        this.emitCommit(undefined);
      }
      throw error;
    }
    this.emitCommit(written);
    return next;
  }

  /**
   * Moves the deployment to a new schema (see backfill.ts), holding the write lock; the batch that
   * stores it tells the other hosts on the store to reload it.
   */
  async migrate(
    spec: unknown,
    onProgress?: (progress: MigrationProgress) => void,
    options: { legacy?: boolean; switching?: SchemaSwitch } = {},
  ): Promise<MigrationReport> {
    // One migration's dropped indexes are cleared before the next begins (both record theirs).
    await this.clearing;
    const { report, clearDropped } = await this.exclusive((fence) =>
      runMigration(this, spec, onProgress, options, fence),
    );
    // Outside the lock: waiting for queries begun before the switch holds no writer back. A
    // failure leaves them recorded, for the next load.
    this.clearing = clearDropped().catch(() => {});
    await this.clearing;
    return report;
  }
}
