import { PlatformError } from "../../sdk/values/index.js";
import type { FencedWork, HostDatabase, IfFree, LockFence, RecordStore } from "../db/index.js";
import type { LogLine } from "./log-line.js";
import { type DeploymentRecord, type RemovalRecord, storageQuotaOwner } from "./records.js";
import type { DeploymentRegistry } from "./registry.js";

/** The name of deployment `id`'s lifecycle lock: deploys, imports and deletes of it take turns. */
function lifecycleLock(id: string): string {
  return `deployment-lifecycle:${id}`;
}

/**
 * The line a deployment's log gets when finishing its removal failed (see
 * {@link DeploymentRemovals.finishUnfinished}): the removal stays marked and is retried.
 */
export function unfinishedRemovalLine(id: string, error: unknown): LogLine {
  return {
    time: new Date().toISOString(),
    level: "error",
    deployment: id,
    handler: "delete",
    platform: true,
    requestId: "-",
    message: `Deleting the deployment is unfinished; a deploy to ${id} or the next start retries: ${String(error)}`,
  };
}

/**
 * Run once an action holds its deployment's lock, before it does anything; throws to refuse. Its
 * caller was checked before it queued for the lock, and may have lost the right while it waited
 * (a developer token replaced behind a long migration).
 */
export type StillAllowed = () => Promise<void>;

/**
 * Something outside the document database that keeps state per deployment (stored objects and
 * their quota, sign-in sessions): it removes all of it for a deleted deployment. Purges must be
 * idempotent: an interrupted removal runs them again.
 */
export interface DeploymentScopedState {
  /**
   * Removes what deployment `id` kept here; its uploads counted against `quotaOwner`. `fence`: the
   * deployment's lifecycle lock's, for the writes (another host may finish the removal instead).
   */
  purgeDeployment(id: string, quotaOwner: string, fence?: LockFence): Promise<void>;
}

/**
 * Deleting a deployment so that nothing of it remains, even across a crash. The record is removed
 * and a removal marker written in one batch; then the rows, indexes, counts and metadata go, then
 * every registered {@link DeploymentScopedState}; the marker is removed last. A host finishes every
 * marked removal when it starts, and a deploy to a marked id finishes it first, so a new deployment
 * under the same id never sees the old one's state. One lock per id (across hosts sharing the
 * database) orders deletes and deploys of the same id.
 */
export class DeploymentRemovals {
  private readonly states: DeploymentScopedState[] = [];
  /** The markers of removals under way, by deployment id. */
  private readonly markers: RecordStore<RemovalRecord>;

  constructor(
    private readonly db: HostDatabase,
    private readonly registry: DeploymentRegistry,
    /** Stops the deployment's isolate in this process. */
    private readonly stop: (id: string) => void,
  ) {
    this.markers = db.records<RemovalRecord>("deployment-removals");
  }

  /** Registers state to purge with every removed deployment, after the rows. */
  add(state: DeploymentScopedState): void {
    this.states.push(state);
  }

  /**
   * Runs `work` holding the lock of deployment id `id`, after finishing its unfinished removal and
   * reloading its record (so `work` never acts on a cached record another host has replaced), in
   * its developer's turn (see `LockOptions.owner`): the one its record names, else `creator`, else
   * the id alone. `turn: false` for work that takes turns of its own (an import: one at a time on
   * the host already, and waiting for its developer's turn there held up every other import).
   * `work` gets the lock's fence, for the writes of what it read under the lock (lock-fence.ts):
   * should the lock be lost meanwhile, another host's deploy or delete may have come between.
   */
  async whileLocked<T>(
    id: string,
    work: FencedWork<T>,
    options: { creator?: string | undefined; turn?: boolean } = {},
  ): Promise<T> {
    const owner = options.turn === false ? undefined : await this.ownerFor(id, options.creator);
    return this.db.exclusive(
      lifecycleLock(id),
      (fence) => this.afterRemoval(id, work, fence),
      // Held for a whole deploy or delete, while the deployment's write lock is taken inside it.
      owner === undefined ? { outer: true } : { outer: true, owner },
    );
  }

  /**
   * An import's hold of deployment `id`'s lock (see import-archive.ts): taken in this process,
   * first come first served, before `turn` (the host's one import turn) comes, so that waiting
   * for a deploy of the same deployment never holds that turn (one developer's long migration
   * held up every other developer's import for as long as it ran); then, in the turn, on other
   * hosts only if none holds it: `{ ran: false }` when one does. `work` gets the lock's fence, as
   * {@link whileLocked}'s does.
   */
  whileLockedForImport<T>(
    id: string,
    turn: (inTurn: () => Promise<IfFree<T>>) => Promise<IfFree<T>>,
    work: FencedWork<T>,
  ): Promise<IfFree<T>> {
    const name = lifecycleLock(id);
    return this.db.inProcess(name, () =>
      turn(() => this.db.acrossIfFree(name, (fence) => this.afterRemoval(id, work, fence), { outer: true })),
    );
  }

  /** How many deploys, imports, deletes and settings changes of deployment `id` hold or wait for its lock here. */
  usersHere(id: string): number {
    return this.db.usersHere(lifecycleLock(id));
  }

  /**
   * Finishes deployment `id`'s unfinished removal and reloads its record, then runs `work`; `fence`
   * is the lifecycle lock's, when the store's locks have fences.
   */
  private async afterRemoval<T>(id: string, work: FencedWork<T>, fence?: LockFence): Promise<T> {
    const removal = await this.markers.get(id);
    if (removal) await this.finish(removal, fence);
    await this.registry.reload(id);
    return work(fence);
  }

  /** Whose turn deployment `id`'s lock is taken in: its record's developer, else `creator`'s, else its own. */
  private async ownerFor(id: string, creator: string | undefined): Promise<string> {
    const known = this.registry.ownerOf(id);
    if (known !== undefined) return known;
    const record = await this.registry.get(id).catch(() => undefined);
    return record ? storageQuotaOwner(record) : (creator ?? `dev:${id}`);
  }

  /**
   * Runs `work` holding the locks of every id of `ids`, taken together when all are free, or
   * holding none when they never are (see `HostDatabase.exclusiveAtOnce`): waiting for a slow
   * import of one, it holds none of the others. `signal` ends the wait.
   */
  whileAllLocked<T>(ids: string[], work: (locked: boolean) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.db.exclusiveAtOnce(
      ids.map(lifecycleLock),
      () => work(true),
      () => work(false),
      signal ? { outer: true, signal } : { outer: true },
    );
  }

  /**
   * Deletes deployment `expected` and everything it stored: `not_found` when it is gone, `conflict`
   * when the id now names another incarnation (deleted and recreated meanwhile, perhaps by another
   * developer: the caller's right to delete was checked on the old one). `stillAllowed` runs first
   * once the lock is held (see `StillAllowed`).
   */
  remove(expected: DeploymentRecord, stillAllowed?: StillAllowed): Promise<void> {
    const id = expected.id;
    return this.whileLocked(id, async (fence) => {
      await stillAllowed?.();
      const record = await this.registry.get(id);
      if (!record) throw new PlatformError("not_found", `No deployment named ${id}.`);
      if (record.incarnation !== expected.incarnation || record.owner !== expected.owner)
        throw new PlatformError(
          "conflict",
          `Deployment ${id} changed meanwhile; read it again before deleting it.`,
        );
      const removal: RemovalRecord = {
        id,
        incarnation: record.incarnation ?? null,
        owner: record.owner,
        quotaOwner: storageQuotaOwner(record),
        startedAt: Date.now(),
      };
      // Its batch tells the other hosts: they stop serving it as it is hidden.
      await this.registry.retire(
        record,
        { type: "put", key: this.markers.key(id), value: JSON.stringify(removal) },
        fence,
      );
      this.stop(id);
      await this.finish(removal, fence);
      // Its bundle goes once no deployment uses it (else the hourly sweep removes it).
      await this.registry.artifacts.release(record.artifact).catch(() => {});
    });
  }

  /**
   * Finishes every removal a previous run of a host left unfinished (a crash midway), and tells the
   * other hosts of each one finished: a host that crashed, or one of an earlier version, may have
   * hidden the deployment and never said so, and they would serve it from their cache. One that
   * fails now (storage unreachable) is reported to `onFailure` and stays marked: a deploy to its
   * id, or the next start, finishes it.
   */
  async finishUnfinished(onFailure: (id: string, error: unknown) => void): Promise<void> {
    for (const removal of await this.markers.list())
      await this.whileLocked(removal.id, async () => {}).then(
        () => this.registry.announce(removal.id),
        (error: unknown) => onFailure(removal.id, error),
      );
  }

  /**
   * Removes what is left of `removal`'s deployment, then its marker, under the lifecycle lock whose
   * `fence` is given: the database's clears, the purges' writes and the marker's removal land only
   * while it is held (stored objects' bytes, in the blob store, are deleted unchecked).
   */
  private async finish(removal: RemovalRecord, fence?: LockFence): Promise<void> {
    this.stop(removal.id);
    await this.db.dropDeployment(removal.id, fence);
    for (const state of this.states) await state.purgeDeployment(removal.id, removal.quotaOwner, fence);
    // Ends the removal: its id can be used again.
    await this.markers.delete(removal.id, fence);
  }
}
