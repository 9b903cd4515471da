import { setImmediate as nextTurn } from "node:timers/promises";
import { isPlatformError } from "../../sdk/values/index.js";
import type { GroupCommitHost, QueuedMutation, TransactionResult } from "./group-commit-host.js";
import { addMoves, GroupCounts } from "./group-counts.js";
import { OPERATIONS_PER_TURN } from "./kv/batch-fold.js";
import {
  type KvOperation,
  type KvSnapshot,
  type LockFence,
  NOTHING_SENT,
  refusedForLostLock,
} from "./kv/index.js";
import { notConfirmed } from "./mutation-waits.js";
import type { WriteOverlay } from "./overlay.js";
import { rowQuotaExceeded } from "./row-bytes.js";
import { countWrites } from "./stored-counts.js";
import type { Transaction } from "./transaction.js";

/**
 * The writes of one group commit: the overlay of everything its members wrote so far (each new
 * member reads through it), the members waiting for their writes to land, and the batches in
 * flight. Batches land in order; each holds every write of the group so far (rewriting a key with
 * the value an earlier batch already stored changes nothing: the group holds the write lock). If
 * a batch fails, every member not yet answered fails with it and nothing more is written.
 */
export class GroupBatch {
  /** Every write of the group's members that succeeded, for the next member to fork. */
  overlay: WriteOverlay | undefined;
  /** How the members that succeeded moved counts, by count name (what a member counting now adds). */
  readonly counts = new GroupCounts();
  /** The members' moves of counts no batch has stored yet: the next batch adds their sums. */
  private countsToStore: Array<ReadonlyMap<string, number>> = [];
  private inserted = false;
  /** Whether a member moved the row bytes, which the batches then store. */
  private rowBytesMoved = false;
  private waiting: Array<{ member: QueuedMutation; result: TransactionResult<unknown> }> = [];
  private tail: Promise<void> = Promise.resolve();
  /** The snapshot the last batch's commit began, for the next group. */
  private continued: KvSnapshot | undefined;
  private failure: { error: unknown } | undefined;

  /**
   * `rowBytes`: the deployment's row bytes before the group; then with every member's writes added.
   * `committing` is told of each member whose answer now waits for a commit (see
   * {@link commitFinished}).
   */
  constructor(
    private readonly database: GroupCommitHost,
    private readonly snapshot: KvSnapshot,
    private rowBytes: number,
    /** The write lock's (see `TenantDatabase.exclusive`): passed with every commit. */
    private readonly fence: LockFence | undefined,
    private readonly committing: (member: QueuedMutation) => void = () => {},
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
    if (sealed.counts) {
      this.counts.add(sealed.counts);
      this.countsToStore.push(sealed.counts);
    }
    this.inserted ||= sealed.inserted;
    this.waiting.push({
      member,
      result: { value, usage: tx.budget.usage, readSet: tx.readSet, writeSet: sealed.writeSet },
    });
  }

  /**
   * Starts a batch for the members waiting now (after the batches in flight). With `thenRead` (the
   * group's last batch), its commit begins the next group's snapshot, reading those keys: see
   * {@link landed}.
   */
  commitFinished(thenRead?: Buffer[]): void {
    if (this.waiting.length === 0 || this.failure || !this.overlay) return;
    const members = this.waiting;
    this.waiting = [];
    // From now on each waits for commits only: the batches before this one, then its own.
    for (const { member } of members) this.committing(member);
    const written = members.flatMap(({ result }) => result.writeSet);
    // What this batch stores is taken now; its operations are made in its turn. The overlay is not
    // written to again: later members write to forks of it (copy-on-write).
    const overlay = this.overlay;
    const stamps: KvOperation[] = [];
    if (this.inserted)
      stamps.push({ type: "put", key: this.database.clockKey, value: String(this.database.clockValue()) });
    const rowBytes = this.rowBytesMoved ? this.rowBytes : undefined;
    if (rowBytes !== undefined)
      stamps.push({ type: "put", key: this.database.rowBytes.key, value: String(rowBytes) });
    // A batch rewrites every write of the group so far, but adds only what no batch added yet.
    const counts = this.countsToStore;
    this.countsToStore = [];
    this.tail = this.tail.then(async () => {
      if (this.failure) {
        for (const { member } of members) member.reject(this.failure.error);
        return;
      }
      try {
        // Members that wrote nothing still wait for the batches before them (they read those writes).
        if (written.length > 0) {
          const operations = await batchOperations(overlay, stamps, counts);
          this.continued = await this.database.commitWrites(
            this.snapshot,
            operations,
            written,
            thenRead,
            this.fence,
          );
        }
        if (rowBytes !== undefined) this.database.rowBytes.known = rowBytes;
      } catch (error) {
        this.failure = { error };
        // Unavailable: the connection was lost with the commit in flight, which may still land
        // (unless the store refused it before sending it, or its fence refused it).
        const answer =
          isPlatformError(error) &&
          error.code === "unavailable" &&
          error.cause !== NOTHING_SENT &&
          !refusedForLostLock(error)
            ? notConfirmed("(it stopped answering)", error)
            : error;
        for (const { member } of members) member.reject(answer);
        return;
      }
      for (const { member, result } of members) member.resolve(result);
    });
  }

  /** Whether a batch was refused because the write lock was lost (see lock-fence.ts). */
  get lockLost(): boolean {
    return refusedForLostLock(this.failure?.error);
  }

  /**
   * Waits until every batch started has landed or failed; members left waiting fail too. Answers
   * the snapshot the last batch's commit began (see {@link commitFinished}), if it did.
   */
  async landed(): Promise<KvSnapshot | undefined> {
    await this.tail;
    if (this.failure) for (const { member } of this.waiting) member.reject(this.failure.error);
    return this.continued;
  }
}

/**
 * A batch's operations: the overlay's writes in key order, then `stamps`, then an add of each
 * count's sum of `moves` (none for a sum of 0), made a few thousand per turn of the event loop (a
 * mutation of thousands of inserts into indexed tables makes tens of thousands).
 */
async function batchOperations(
  overlay: WriteOverlay,
  stamps: readonly KvOperation[],
  moves: ReadonlyArray<ReadonlyMap<string, number>>,
): Promise<KvOperation[]> {
  const operations: KvOperation[] = [];
  for (const entry of overlay.each()) {
    operations.push(
      entry.value === null
        ? { type: "del", key: entry.key }
        : { type: "put", key: entry.key, value: entry.value },
    );
    if (operations.length % OPERATIONS_PER_TURN === 0) await nextTurn();
  }
  for (const stamp of stamps) operations.push(stamp);
  let sums = moves[0] ?? new Map<string, number>();
  if (moves.length > 1) {
    const summed = new Map<string, number>();
    for (const member of moves) {
      addMoves(summed, member);
      if (member.size >= OPERATIONS_PER_TURN) await nextTurn();
    }
    sums = summed;
  }
  for (const add of countWrites(sums)) {
    operations.push(add);
    if (operations.length % OPERATIONS_PER_TURN === 0) await nextTurn();
  }
  return operations;
}
