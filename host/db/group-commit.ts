import type { BudgetLimits, BudgetUsage } from "./budget.js";
import { groupReadKeys, readAhead } from "./group-reads.js";
import type { KvOperation, KvSnapshot, KvStore } from "./kv/index.js";
import type { WriteOverlay } from "./overlay.js";
import type { ReadSet } from "./read-write-sets.js";
import { rowQuotaExceeded } from "./row-bytes.js";
import type { RowBytesTotal } from "./row-bytes-total.js";
import { countWrites } from "./stored-counts.js";
import { Transaction } from "./transaction.js";
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
  readonly clockKey: Buffer;
  clockValue(): number;
  /** Runs `work` holding the deployment's write lock in this process and across processes. */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
  /** The in-process write lock: contended while other work waits for it (a drop, an import, a migration). */
  readonly lock: Pick<WriteLock, "contended">;
  /** Commits `operations` on `snapshot` and tells listeners what was written. */
  commitWrites(snapshot: KvSnapshot, operations: KvOperation[], written: Buffer[]): Promise<void>;
  /** The deployment's row bytes and their limit (row-bytes-total.ts), under the write lock. */
  readonly rowBytes: RowBytesTotal;
  /** The row bytes, counted and stored first when not known. */
  storedRowBytes(): Promise<number>;
}

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

/**
 * Groups committed one after another under one taking of the write lock, at most, while more
 * mutations wait. Taking the lock across processes is a round trip that waits for the previous
 * holder's release to reach the server (on PostgreSQL about a fifth of a busy deployment's time
 * per group). The bound lets another process's writers in; this process's other exclusive work
 * (a drop, an import, a migration) goes first as soon as it asks.
 */
const GROUPS_PER_LOCK = 4;

/**
 * A deployment's writers, serialized and committed in groups: the mutations that queued while one
 * group held the write lock run next, one after another, each reading the writes of those before
 * it (they are not in the snapshot yet), and their writes go to the store as ONE atomic batch. A
 * mutation that throws leaves the others' writes alone; each answers once its writes have landed.
 * Waiting for the store's write round trip once per group, not once per mutation, is what lets a
 * busy deployment take more than one write per round trip.
 */
export class GroupCommit {
  private readonly queued: QueuedMutation[] = [];
  private draining = false;

  constructor(private readonly database: GroupCommitHost) {}

  /** Queues a mutation; it runs with the next group. */
  enqueue(member: QueuedMutation): void {
    this.queued.push(member);
    if (!this.draining) void this.drain();
  }

  /**
   * Commits the queued mutations group by group while any are waiting, up to
   * {@link GROUPS_PER_LOCK} groups each time it takes the write lock. Each group has a snapshot of
   * its own, which sees the groups before it: they committed under the same lock.
   */
  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queued.length > 0) {
        let group = this.queued.splice(0, MAX_GROUP);
        await this.database
          .exclusive(async () => {
            for (let groups = 1; ; groups++) {
              await this.commitGroup(group);
              // Whoever asked for the lock meanwhile goes first (a drop refuses the groups after it).
              if (this.queued.length === 0 || groups === GROUPS_PER_LOCK || this.database.lock.contended)
                return;
              group = this.queued.splice(0, MAX_GROUP);
            }
          })
          .catch((error: unknown) => {
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
    const database = this.database;
    const rowBytes = database.rowBytes.known ?? (await database.storedRowBytes());
    // Taken under the write lock, with the first read: no commit of this deployment can come between.
    const snapshot = await database.store.lazySnapshot();
    const batch = new GroupBatch(database, snapshot, rowBytes);
    const started = performance.now();
    try {
      if (!database.syncReads)
        await readAhead(
          snapshot,
          groupReadKeys(
            database.tables,
            group.map((member) => member.options),
          ),
        );
      for (const [index, member] of group.entries()) {
        if (index > 0 && performance.now() - started > GROUP_WINDOW_MS) {
          // Commit what ran so far: the rest go first in the next group.
          this.queued.unshift(...group.slice(index));
          break;
        }
        const { onUsage, ...rest } = member.options;
        const tx = new Transaction(database, snapshot, withMode(rest, "write"), batch.overlay, batch.counts);
        const early = database.store.supports.commitKeepsSnapshot
          ? setTimeout(() => batch.commitFinished(), EARLY_COMMIT_MS)
          : undefined;
        try {
          const value = await member.work(tx);
          if (tx.budget.failure) throw tx.budget.failure;
          if (tx.writesPending) await tx.finishWrites();
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
  /** How the members that succeeded moved counts, by count name (what a member counting now adds). */
  readonly counts = new Map<string, number>();
  /** The part of {@link counts} no batch has stored yet: the next batch adds it. */
  private countsToStore = new Map<string, number>();
  private inserted = false;
  /** Whether a member moved the row bytes, which the batches then store. */
  private rowBytesMoved = false;
  private waiting: Array<{ member: QueuedMutation; result: TransactionResult<unknown> }> = [];
  private tail: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;

  /** `rowBytes`: the deployment's row bytes before the group; then with every member's writes added. */
  constructor(
    private readonly database: GroupCommitHost,
    private readonly snapshot: KvSnapshot,
    private rowBytes: number,
  ) {}

  /**
   * Records a member that succeeded: its writes join the group's, its answer waits for them. A
   * member whose writes would take the row bytes past the limit is refused (`quota_exceeded`)
   * instead, and none of its writes join; one whose handler's writes free bytes or keep them is
   * never refused (the host's own writes, a guest upgrade's, alone never are).
   */
  add(member: QueuedMutation, value: unknown, tx: Transaction): void {
    const moved = tx.rowBytes.total;
    const limit = this.database.rowBytes.limit;
    if (moved - tx.rowBytes.byHost > 0 && this.rowBytes + moved > limit)
      throw rowQuotaExceeded(this.rowBytes, moved, limit);
    const sealed = tx.seal();
    if (moved !== 0) {
      this.rowBytes += moved;
      this.rowBytesMoved = true;
    }
    this.overlay = sealed.overlay;
    if (sealed.counts)
      for (const [name, delta] of sealed.counts) {
        this.counts.set(name, (this.counts.get(name) ?? 0) + delta);
        this.countsToStore.set(name, (this.countsToStore.get(name) ?? 0) + delta);
      }
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
    const rowBytes = this.rowBytesMoved ? this.rowBytes : undefined;
    if (rowBytes !== undefined)
      operations.push({ type: "put", key: this.database.rowBytes.key, value: String(rowBytes) });
    // A batch rewrites every write of the group so far, but adds only what no batch added yet.
    operations.push(...countWrites(this.countsToStore));
    this.countsToStore = new Map();
    this.tail = this.tail.then(async () => {
      if (this.failure) {
        for (const { member } of members) member.reject(this.failure.error);
        return;
      }
      try {
        // Members that wrote nothing still wait for the batches before them (they read those writes).
        if (written.length > 0) await this.database.commitWrites(this.snapshot, operations, written);
        if (rowBytes !== undefined) this.database.rowBytes.known = rowBytes;
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
