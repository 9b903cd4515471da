import { GroupBatch } from "./group-batch.js";
import { type GroupCommitHost, type QueuedMutation, withMode } from "./group-commit-host.js";
import { groupReadKeys, readAhead } from "./group-reads.js";
import { type KvSnapshot, type LockFence, lockLostError } from "./kv/index.js";
import { MutationWaits } from "./mutation-waits.js";
import { Transaction } from "./transaction.js";

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
 * (a drop, an import, a migration) goes next when it asks: after the group under way, and where
 * reads are round trips after the group chosen to begin with that group's commit too.
 */
const GROUPS_PER_LOCK = 4;

/**
 * A deployment's writers, serialized and committed in groups: the mutations that queued while one
 * group held the write lock run next, one after another, each reading the writes of those before
 * it (they are not in the snapshot yet), and their writes go to the store as ONE atomic batch. A
 * mutation that throws leaves the others' writes alone; each answers once its writes have landed.
 * Waiting for the store's write round trip once per group, not once per mutation, is what lets a
 * busy deployment take more than one write per round trip. A mutation waits for the database for
 * a bounded time only (see {@link MutationWaits}).
 */
export class GroupCommit {
  private readonly queued: QueuedMutation[] = [];
  private draining = false;
  private readonly waits: MutationWaits;

  /** `waitMs`: how long a mutation waits for the database (`LIMITS.mutationWaitMs`). */
  constructor(
    private readonly database: GroupCommitHost,
    waitMs: number,
  ) {
    this.waits = new MutationWaits(waitMs, (member) => {
      const at = this.queued.indexOf(member);
      if (at !== -1) this.queued.splice(at, 1);
    });
  }

  /** Queues a mutation; it runs with the next group. */
  enqueue(member: QueuedMutation): void {
    this.queued.push(this.waits.bound(member));
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
          .exclusive(async (fence) => {
            let begun: KvSnapshot | undefined;
            for (let groups = 1; ; groups++) {
              const next = await this.commitGroup(group, begun, groups, fence);
              if (!next) return;
              ({ group, begun } = next);
            }
          }, true)
          .catch((error: unknown) => {
            // Members put back for the next group still run; the others fail (a settled one ignores it).
            for (const member of group) if (!this.queued.includes(member)) member.reject(error);
          });
      }
    } finally {
      this.draining = false;
    }
  }

  /** The group to commit next under the same taking of the lock, after `groups` groups; none to let go of it. */
  private nextGroup(groups: number): QueuedMutation[] | undefined {
    // Whoever asked for the lock meanwhile goes first (a drop refuses the groups after it).
    if (this.queued.length === 0 || groups >= GROUPS_PER_LOCK || this.database.lock.contended)
      return undefined;
    return this.queued.splice(0, MAX_GROUP);
  }

  /**
   * Runs one group (the `groups`-th under this taking of the lock) on one snapshot, `begun` by the
   * group before when given, and commits the writes of those that succeeded; answers the next
   * group to run under the lock, if any. Where reads are round trips, the next group is chosen
   * before the commit, and its snapshot begins with the commit, having read what its members name
   * (one round trip for both). While a member runs for longer than {@link EARLY_COMMIT_MS}, the
   * members that finished before it are committed and answered without waiting for it (on stores
   * that can commit twice on one snapshot).
   */
  private async commitGroup(
    group: QueuedMutation[],
    begun: KvSnapshot | undefined,
    groups: number,
    fence: LockFence | undefined,
  ): Promise<{ group: QueuedMutation[]; begun: KvSnapshot | undefined } | undefined> {
    const database = this.database;
    let snapshot = begun;
    let next: QueuedMutation[] | undefined;
    let batch: GroupBatch | undefined;
    try {
      const rowBytes = database.rowBytes.known ?? (await database.storedRowBytes(fence));
      // Taken under the write lock, with the first read: no commit of this deployment can come between.
      snapshot ??= await database.store.lazySnapshot(database.share());
      batch = new GroupBatch(database, snapshot, rowBytes, fence, (member) => this.waits.committing(member));
      const readsAhead = !database.syncReads;
      if (readsAhead && !begun) await readAhead(snapshot, this.readKeys(group));
      await this.runMembers(group, snapshot, batch);
      if (readsAhead) next = this.nextGroup(groups);
      batch.commitFinished(next && this.readKeys(next));
      const continued = await batch.landed();
      // The write lock was lost with its connection: no group more under this taking of it (their
      // writes would be refused too); they wait for the next.
      if (batch.lockLost) throw lockLostError();
      if (!readsAhead) next = this.nextGroup(groups);
      return next && { group: next, begun: continued };
    } catch (error) {
      // Chosen to come next, they have not run: first in line again.
      if (next) this.queued.unshift(...next);
      // A batch an early commit started lands before the write lock is let go.
      await batch?.landed().catch(() => undefined);
      throw error;
    } finally {
      await snapshot?.close().catch(() => {});
    }
  }

  /** What the members of `group` name, for their snapshot to read ahead (group-reads.ts). */
  private readKeys(group: QueuedMutation[]): Buffer[] {
    return groupReadKeys(
      this.database.tables,
      group.map((member) => member.options),
    );
  }

  /** Runs `group`'s members one after another, each on the writes of those before it. */
  private async runMembers(group: QueuedMutation[], snapshot: KvSnapshot, batch: GroupBatch): Promise<void> {
    const database = this.database;
    const started = performance.now();
    for (const [index, member] of group.entries()) {
      if (index > 0 && performance.now() - started > GROUP_WINDOW_MS) {
        // Commit what ran so far: the rest go first in the next group.
        this.queued.unshift(...group.slice(index));
        return;
      }
      // Answered already for waiting too long: it never runs.
      if (!this.waits.starts(member)) continue;
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
  }
}
