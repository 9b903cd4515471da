import { PlatformError } from "../../sdk/values/index.js";
import type { BudgetLimits, BudgetUsage } from "./budget.js";
import type { CursorCodec } from "./cursor.js";
import type { HostMessage } from "./host-message.js";
import { metaKey } from "./keys.js";
import type { KvOperation, KvSnapshot, KvStore } from "./kv/index.js";
import type { MaybePromise } from "./maybe-sync.js";
import {
  type MigrationProgress,
  type MigrationReport,
  planMigration,
  rowsOf,
  storedIndexRanges,
} from "./migrate.js";
import type { WriteOverlay } from "./overlay.js";
import { keepReadSetOfFailure, type ReadSet } from "./read-write-sets.js";
import { hasLegacyCreatedAt, indexEntry, materialize, parseStoredRow } from "./rows.js";
import {
  type CompiledTable,
  compileSchema,
  emptySchema,
  type StoredIndex,
  type StoredSchema,
} from "./stored-schema.js";
import { Transaction, type TransactionHost, type TransactionOptions } from "./transaction.js";
import { WriteLock } from "./write-lock.js";

/** The outcome of a handler run in a transaction. */
export interface TransactionResult<T> {
  value: T;
  usage: BudgetUsage;
  readSet: ReadSet;
  /** Keys the commit wrote (empty for queries and failed mutations). */
  writeSet: Buffer[];
}

/** Options of {@link DeploymentDatabase.query} and {@link DeploymentDatabase.mutate}. */
export type RunOptions = Omit<TransactionOptions, "mode"> & {
  budget?: BudgetLimits;
  /** Receives what the handler used, whether it succeeded or failed (logs, the budget harness). */
  onUsage?: (usage: BudgetUsage) => void;
};

/**
 * A run's transaction options. Not `{ ...options, mode }`: on Node 20's V8 an object literal that
 * starts with a spread and adds properties takes 0.4-2 µs, and leaves garbage that outlives a
 * young-generation collection (measured: about 120-500 bytes each); `Object.assign` takes 50 ns.
 */
function withMode(
  options: Omit<RunOptions, "onUsage">,
  mode: TransactionOptions["mode"],
): TransactionOptions {
  return Object.assign({ mode }, options);
}

/**
 * Called after every commit with its write set (live queries subscribe here); `undefined` when a
 * commit of another process was too large to describe, meaning "anything may have changed".
 */
export type CommitListener = (writeSet: Buffer[] | undefined) => void;

/** Largest write set sent to other processes key by key; larger ones say "everything". */
const BROADCAST_KEYS_BYTES = 6000;

/** Mutations committed together at most (a deployment has at most 64 handlers in flight). */
const MAX_GROUP = 64;

/**
 * How long a group keeps starting its next mutation (ms). Members that succeeded wait for the whole
 * group's batch, so a slow mutation delays the acknowledgment of those before it in its group; the
 * window bounds how many that can be.
 */
const GROUP_WINDOW_MS = 20;

/**
 * How long a member of a group may run (ms) before the members that finished before it are
 * committed and answered without waiting for it.
 */
const EARLY_COMMIT_MS = 5;

/** A mutation waiting for its group. */
interface QueuedMutation {
  work: (tx: Transaction) => MaybePromise<unknown>;
  options: RunOptions;
  resolve: (result: TransactionResult<unknown>) => void;
  reject: (error: unknown) => void;
}

/** 1/1024 ms: exactly representable at epoch-ms magnitudes, so successive createdAt stay distinct. */
const CLOCK_STEP = 1 / 1024;

/**
 * One deployment's database: its schema, its write lock and its clock. Queries run on snapshots
 * without waiting; mutations and migrations take the write lock, so writes are serialized.
 */
export class DeploymentDatabase implements TransactionHost {
  readonly lock = new WriteLock();
  readonly clockKey: Buffer;
  private stored: StoredSchema = emptySchema();
  private compiled = new Map<string, CompiledTable>();
  private lastCreatedAt = 0;
  private readonly listeners = new Set<CommitListener>();
  /** Mutations waiting for the write lock, and whether a group commit is under way. */
  private readonly queued: QueuedMutation[] = [];
  private draining = false;

  constructor(
    readonly store: KvStore,
    readonly id: string,
    readonly cursors: CursorCodec,
  ) {
    this.clockKey = metaKey(id, "clock");
  }

  /** Loads schema and clock; clears index entries a crashed migration left half-built. */
  async load(): Promise<this> {
    const [schema, clock, pending] = await this.store.getMany([
      metaKey(this.id, "schema"),
      this.clockKey,
      metaKey(this.id, "building"),
    ]);
    if (schema) this.setSchema(JSON.parse(schema) as StoredSchema);
    this.lastCreatedAt = clock ? Number(clock) : 0;
    // A build in progress elsewhere (another host) is not ours to clear.
    if (pending && !this.store.shared) {
      for (const { table, stored } of JSON.parse(pending) as PendingBuild[]) {
        await this.clearIndex(table, stored);
      }
      await this.store.batch([{ type: "del", key: metaKey(this.id, "building") }]);
    }
    return this;
  }

  /**
   * Re-reads the schema and the clock, which another process sharing the store may have moved
   * (called under the cross-process write lock, and when another host announces a migration).
   */
  async refresh(): Promise<void> {
    const [schema, clock] = await this.store.getMany([metaKey(this.id, "schema"), this.clockKey]);
    if (schema) {
      const stored = JSON.parse(schema) as StoredSchema;
      if (stored.hash !== this.stored.hash || stored.legacy !== this.stored.legacy) this.setSchema(stored);
    }
    this.lastCreatedAt = Math.max(this.lastCreatedAt, clock ? Number(clock) : 0);
  }

  /** Tells this deployment's listeners about a commit (of this process or, by broadcast, another). */
  emitCommit(writeSet: Buffer[] | undefined): void {
    for (const listener of this.listeners) listener(writeSet);
  }

  /** Runs `work` holding the deployment's write lock in this process and across processes. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.lock.run(() =>
      this.store.lockAcrossProcesses(`deployment:${this.id}`, async () => {
        if (this.store.shared) await this.refresh();
        return work();
      }),
    );
  }

  private setSchema(stored: StoredSchema): void {
    this.stored = stored;
    this.compiled = compileSchema(this.id, stored);
  }

  get schemaHash(): string {
    return this.stored.hash;
  }

  get tables(): ReadonlyMap<string, CompiledTable> {
    return this.compiled;
  }

  /** The schema this deployment serves. */
  get schema(): StoredSchema {
    return this.stored;
  }

  /** True while the deployment serves a legacy (database API v0) schema. */
  get legacy(): boolean {
    return this.stored.legacy === true;
  }

  nextCreatedAt(now: number): number {
    this.lastCreatedAt = Math.max(now, this.lastCreatedAt + CLOCK_STEP);
    return this.lastCreatedAt;
  }

  clockValue(): number {
    return this.lastCreatedAt;
  }

  /** Tells the other processes on the store which keys a commit wrote (or "everything"). */
  private async announceCommit(writeSet: Buffer[]): Promise<void> {
    let bytes = 0;
    for (const key of writeSet) bytes += key.length * 2 + 3;
    const message: HostMessage =
      bytes <= BROADCAST_KEYS_BYTES
        ? { type: "commit", deployment: this.id, keys: writeSet.map((key) => key.toString("hex")) }
        : { type: "commit", deployment: this.id, all: true };
    await this.store.broadcast(JSON.stringify(message)).catch(() => {});
  }

  /** Subscribes to commits; returns the unsubscribe function. */
  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs a read-only handler on one snapshot. Never waits for writers. */
  async query<T>(
    work: (tx: Transaction) => MaybePromise<T>,
    options: RunOptions = {},
  ): Promise<TransactionResult<T>> {
    const { onUsage, ...rest } = options;
    const snapshot = await this.store.snapshot();
    const tx = new Transaction(this, snapshot, withMode(rest, "read"));
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
      await snapshot.close();
    }
  }

  /**
   * Runs a writing handler: waits for the write lock, reads a snapshot taken after every earlier
   * commit, and commits its writes as one batch. A throw (budget errors included) writes nothing.
   *
   * Writers are serialized, and committed in groups: the mutations that queued while one group
   * held the lock run next, one after another, each reading the writes of those before it (they
   * are not in the snapshot yet), and their writes go to the store as ONE atomic batch. A mutation
   * that throws leaves the others' writes alone; each answers once its writes have landed (see
   * {@link commitGroup} for a slow member). Waiting for the store's write round trip once per
   * group, not once per mutation, is what lets a busy deployment take more than one write per
   * round trip.
   */
  mutate<T>(
    work: (tx: Transaction) => MaybePromise<T>,
    options: RunOptions = {},
  ): Promise<TransactionResult<T>> {
    return new Promise<TransactionResult<unknown>>((resolve, reject) => {
      this.queued.push({ work, options, resolve, reject });
      if (!this.draining) void this.drain();
    }) as Promise<TransactionResult<T>>;
  }

  /** Commits the queued mutations group by group while any are waiting. */
  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queued.length > 0) {
        const group = this.queued.splice(0, MAX_GROUP);
        await this.exclusive(() => this.commitGroup(group)).catch((error: unknown) => {
          // Members put back for the next group still run; the others fail (a settled one ignores it).
          for (const member of group) if (!this.queued.includes(member)) member.reject(error);
        });
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * Runs one group on one snapshot and commits the writes of those that succeeded. While a member
   * runs for longer than {@link EARLY_COMMIT_MS}, the members that finished before it are committed
   * and answered without waiting for it (on stores that can commit twice on one snapshot).
   */
  private async commitGroup(group: QueuedMutation[]): Promise<void> {
    const snapshot = await this.store.snapshot();
    const batch = new GroupBatch(this, snapshot);
    const started = performance.now();
    try {
      for (const [index, member] of group.entries()) {
        if (index > 0 && performance.now() - started > GROUP_WINDOW_MS) {
          // Commit what ran so far: the rest go first in the next group.
          this.queued.unshift(...group.slice(index));
          break;
        }
        const { onUsage, ...rest } = member.options;
        const tx = new Transaction(this, snapshot, withMode(rest, "write"), batch.overlay);
        const early = this.store.shared
          ? undefined
          : setTimeout(() => batch.commitFinished(), EARLY_COMMIT_MS);
        try {
          const value = await member.work(tx);
          if (tx.budget.failure) throw tx.budget.failure;
          await tx.flushCounts();
          batch.add(member, value, tx);
        } catch (error) {
          tx.abort();
          member.reject(error);
        } finally {
          clearTimeout(early);
          onUsage?.({ ...tx.budget.usage });
        }
      }
      batch.commitFinished();
      await batch.landed();
    } finally {
      await snapshot.close().catch(() => {});
    }
  }

  /** Deletes a stored index's entries and counts. */
  private async clearIndex(table: string, stored: StoredIndex): Promise<void> {
    for (const range of storedIndexRanges(this.id, table, stored)) await this.store.clear(range);
  }

  /** Commits `operations` on `snapshot` and tells listeners (and other hosts) what was written. */
  async commitWrites(snapshot: KvSnapshot, operations: KvOperation[], written: Buffer[]): Promise<void> {
    await this.store.commit(snapshot, operations);
    this.emitCommit(written);
    if (this.store.shared) await this.announceCommit(written);
  }

  /**
   * Moves the deployment to a new schema (DESIGN.md "Deploy-time migration"). Holds the write lock
   * so no write slips past a backfill; reads keep being served from the old schema until the new
   * one is stored in one write. On failure nothing changes: half-built indexes are cleared.
   */
  async migrate(
    spec: unknown,
    onProgress?: (progress: MigrationProgress) => void,
    options: { legacy?: boolean } = {},
  ): Promise<MigrationReport> {
    const report = await this.exclusive(async () => {
      const snapshot = await this.store.snapshot();
      const building = metaKey(this.id, "building");
      let pending: PendingBuild[] = [];
      try {
        if (options.legacy && !this.stored.legacy && this.stored.hash !== "") {
          throw new PlatformError(
            "bad_request",
            "This deployment serves database API v1; a legacy (v0) capsule cannot replace it.",
          );
        }
        const plan = await planMigration(snapshot, this.id, this.stored, spec, options);
        pending = plan.build.map(({ table, stored }) => ({ table, stored }));
        const report: MigrationReport = { built: [], dropped: [], checkedRows: plan.checkedRows };
        if (pending.length > 0)
          await this.store.batch([{ type: "put", key: building, value: JSON.stringify(pending) }]);
        const nextTables = compileSchema(this.id, plan.next);
        for (const { table, index, stored } of plan.build) {
          await this.clearIndex(table, stored);
          const compiledTable = nextTables.get(table) as CompiledTable;
          const compiledIndex = compiledTable.indexes.get(index)!;
          const counts = new Map<string, number>();
          let done = 0;
          for await (const rows of rowsOf(snapshot, compiledTable.rowPrefix)) {
            const batch: KvOperation[] = [];
            for (const json of rows) {
              const row = parseStoredRow(json);
              if (stored.notBefore !== undefined && row.createdAt < stored.notBefore) continue;
              // Rows stay as stored; an entry built from a legacy row carries its v1 form.
              const value = hasLegacyCreatedAt(json) ? JSON.stringify(row) : json;
              const entry = indexEntry(compiledIndex, materialize(compiledTable, { ...row }));
              batch.push({ type: "put", key: entry.key, value });
              for (const name of entry.counts) counts.set(name, (counts.get(name) ?? 0) + 1);
            }
            await this.store.batch(batch);
            done += rows.length;
            onProgress?.({ table, index, done });
          }
          const countPuts: KvOperation[] = [...counts].map(([name, n]) => ({
            type: "put",
            key: Buffer.from(name, "latin1"),
            value: String(n),
          }));
          for (let at = 0; at < countPuts.length; at += 1000)
            await this.store.batch(countPuts.slice(at, at + 1000));
          report.built.push({ table, index, entries: done });
        }
        await this.store.batch([
          { type: "put", key: metaKey(this.id, "schema"), value: JSON.stringify(plan.next) },
          { type: "del", key: building },
        ]);
        pending = [];
        this.setSchema(plan.next);
        for (const { table, index, stored } of plan.drop) {
          await this.clearIndex(table, stored);
          report.dropped.push({ table, index });
        }
        return report;
      } finally {
        for (const { table, stored } of pending) await this.clearIndex(table, stored);
        if (pending.length > 0) await this.store.batch([{ type: "del", key: building }]);
        await snapshot.close();
      }
    });
    if (this.store.shared) {
      const message: HostMessage = { type: "schema", deployment: this.id };
      await this.store.broadcast(JSON.stringify(message));
    }
    return report;
  }
}

interface PendingBuild {
  table: string;
  stored: StoredIndex;
}

/**
 * The writes of one group commit: the overlay of everything its members wrote so far (each new
 * member reads through it), the members waiting for their writes to land, and the batches in
 * flight. Batches land in order; each holds every write of the group so far (rewriting a key with
 * the value an earlier batch already stored changes nothing: the group holds the write lock). If
 * a batch fails, every member not yet answered fails with it and nothing more is written.
 */
class GroupBatch {
  /** Every write of the group's members that succeeded, for the next member to fork. */
  overlay: WriteOverlay | undefined;
  private inserted = false;
  private waiting: Array<{ member: QueuedMutation; result: TransactionResult<unknown> }> = [];
  private tail: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly database: DeploymentDatabase,
    private readonly snapshot: KvSnapshot,
  ) {}

  /** Records a member that succeeded: its writes join the group's, its answer waits for them. */
  add(member: QueuedMutation, value: unknown, tx: Transaction): void {
    const sealed = tx.seal();
    this.overlay = sealed.overlay;
    this.inserted ||= sealed.inserted;
    this.waiting.push({
      member,
      result: { value, usage: tx.budget.usage, readSet: tx.readSet, writeSet: sealed.writeSet },
    });
  }

  /** Starts a batch for the members waiting now (after the batches in flight). */
  commitFinished(): void {
    if (this.waiting.length === 0 || this.failure || !this.overlay) return;
    const members = this.waiting;
    this.waiting = [];
    const written = members.flatMap(({ result }) => result.writeSet);
    const operations: KvOperation[] = this.overlay
      .all()
      .map((entry) =>
        entry.value === null
          ? { type: "del", key: entry.key }
          : { type: "put", key: entry.key, value: entry.value },
      );
    if (this.inserted)
      operations.push({
        type: "put",
        key: this.database.clockKey,
        value: String(this.database.clockValue()),
      });
    this.tail = this.tail.then(async () => {
      if (this.failure) {
        for (const { member } of members) member.reject(this.failure.error);
        return;
      }
      try {
        // Members that wrote nothing still wait for the batches before them (they read those writes).
        if (written.length > 0) await this.database.commitWrites(this.snapshot, operations, written);
      } catch (error) {
        this.failure = { error };
        for (const { member } of members) member.reject(error);
        return;
      }
      for (const { member, result } of members) member.resolve(result);
    });
  }

  /** Waits until every batch started has landed or failed; members left waiting fail too. */
  async landed(): Promise<void> {
    await this.tail;
    if (this.failure) for (const { member } of this.waiting) member.reject(this.failure.error);
  }
}
