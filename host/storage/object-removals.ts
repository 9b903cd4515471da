import { checkObjectDelete, type ObjectDeleter } from "../access/index.js";
import {
  bothFences,
  type FencedWork,
  type HostDatabase,
  type LockFence,
  type RecordStore,
} from "../db/index.js";
import type { BlobDeletions } from "./blob-deletions.js";
import type { BlobStore } from "./blob-store.js";
import { listingId, OBJECT_NAMESPACES, quotaLockName } from "./object-keys.js";
import { checkObjectId } from "./object-limits.js";
import { chargeOf, type ObjectRecord, type Visibility } from "./object-records.js";

/** Object records removed per batch when a deployment is deleted. */
const PURGE_BATCH = 500;
/**
 * Blobs a purge deletes at once: an S3 bucket answers each delete in a round trip, and a
 * deployment's 25,600 smallest files took minutes one after another, under its lifecycle lock.
 */
const PURGE_DELETES_AT_ONCE = 16;

/**
 * Removing stored objects: one, by whoever may delete it, or every object of a deleted
 * deployment. Records and listing entries leave in the same batch that frees their bytes from
 * their owner's usage, under the owner's quota lock (see {@link ObjectService}); the bytes go
 * after, through the deletions a host backup can hold (blob-deletions.ts).
 */
export class ObjectRemovals {
  private readonly records: RecordStore<ObjectRecord>;
  private readonly byTime: RecordStore<{ key: string }>;
  private readonly usage: RecordStore<{ bytes: number }>;
  private readonly totals: RecordStore<{ count: number; bytes: number }>;

  constructor(
    private readonly db: HostDatabase,
    private readonly blobs: BlobStore,
    private readonly deletions: BlobDeletions,
  ) {
    this.records = db.records<ObjectRecord>(OBJECT_NAMESPACES.records);
    this.byTime = db.records<{ key: string }>(OBJECT_NAMESPACES.byTime);
    this.usage = db.records<{ bytes: number }>(OBJECT_NAMESPACES.usage);
    this.totals = db.records<{ count: number; bytes: number }>(OBJECT_NAMESPACES.totals);
  }

  /** The owner's quota lock, as the object service takes it (see ObjectService's). */
  private lock(owner: string): { run<T>(work: FencedWork<T>): Promise<T> } {
    return { run: (work) => this.db.exclusive(quotaLockName(owner), work) };
  }

  /** The record of `<visibility>/<id>` in `deployment`, or undefined. */
  private record(deployment: string, visibility: Visibility, id: string): Promise<ObjectRecord | undefined> {
    return this.records.get(`${deployment}/${visibility}/${checkObjectId(id)}`);
  }

  /**
   * Deletes `<visibility>/<id>` (idempotent: a missing object is fine) if `deleter` may (see
   * `checkObjectDelete`: the owner any object, an app user only their own). Frees its bytes from
   * the owner's quota in the same batch. `confirm` runs once the object was read, before anything
   * is decided on it: it refuses a caller allowed for another incarnation of the deployment.
   */
  async remove(
    deployment: string,
    visibility: Visibility,
    id: string,
    deleter: ObjectDeleter,
    confirm: () => Promise<unknown>,
  ): Promise<boolean> {
    const existing = await this.record(deployment, visibility, id);
    await confirm();
    if (!existing) return false;
    checkObjectDelete(deleter, existing);
    const removed = await this.lock(existing.quotaOwner).run(async (fence) => {
      const record = await this.record(deployment, visibility, id);
      if (!record) return false;
      const used = (await this.usage.get(record.quotaOwner))?.bytes ?? 0;
      const totals = (await this.totals.get(deployment)) ?? { count: 1, bytes: record.size };
      await this.records.batch(
        [{ id: `${deployment}/${record.key}`, value: null }],
        [
          { key: this.byTime.key(listingId(record)), value: null },
          {
            key: this.usage.key(record.quotaOwner),
            value: JSON.stringify({ bytes: Math.max(0, used - chargeOf(record)) }),
          },
          {
            key: this.totals.key(deployment),
            value: JSON.stringify({
              count: Math.max(0, totals.count - 1),
              bytes: Math.max(0, totals.bytes - record.size),
            }),
          },
        ],
        fence,
      );
      return true;
    });
    if (removed) await this.deletions.delete(`${deployment}/${visibility}/${id}`).catch(() => {});
    return removed;
  }

  /**
   * Removes every object of deleted deployment `deployment`: records and listing entries leave in
   * the same batch that frees their bytes from each quota owner's usage (so a rerun after a crash
   * never frees bytes twice), then the totals, then the bytes, including any a crash left behind.
   * Taking `quotaOwner`'s lock first lets an upload that passed its check before the deletion
   * finish writing its record, so the listing below sees it (later uploads see the deployment gone).
   * `lifecycle`: the deployment's lifecycle lock's fence, which the writes pass too.
   */
  async purgeDeployment(deployment: string, quotaOwner: string, lifecycle?: LockFence): Promise<void> {
    const prefix = `${deployment}/`;
    await this.lock(quotaOwner).run(async () => {});
    for (;;) {
      const found = await this.records.listPrefix(prefix, PURGE_BATCH);
      if (found.length === 0) break;
      for (const owner of new Set(found.map((record) => record.quotaOwner)))
        await this.lock(owner).run((fence) =>
          this.purgeOwned(deployment, owner, found, bothFences(lifecycle, fence)),
        );
    }
    await this.byTime.deletePrefix(prefix, lifecycle);
    await this.totals.delete(deployment, lifecycle);
    const keys = await this.blobs.list(prefix);
    let next = 0;
    const deleteNext = async (): Promise<void> => {
      while (next < keys.length) await this.deletions.delete(keys[next++] as string);
    };
    await Promise.all(Array.from({ length: Math.min(PURGE_DELETES_AT_ONCE, keys.length) }, deleteNext));
  }

  /** Under `owner`'s lock: drops the still-present records of `found` owned by `owner`, freeing their bytes. */
  private async purgeOwned(
    deployment: string,
    owner: string,
    found: ObjectRecord[],
    fence: LockFence | undefined,
  ): Promise<void> {
    const present: ObjectRecord[] = [];
    for (const record of found) {
      if (record.quotaOwner !== owner) continue;
      if (await this.records.get(`${deployment}/${record.key}`)) present.push(record);
    }
    if (present.length === 0) return;
    const freed = present.reduce((sum, record) => sum + chargeOf(record), 0);
    const used = (await this.usage.get(owner))?.bytes ?? 0;
    await this.records.batch(
      present.map((record) => ({ id: `${deployment}/${record.key}`, value: null })),
      [
        ...present.map((record) => ({ key: this.byTime.key(listingId(record)), value: null })),
        { key: this.usage.key(owner), value: JSON.stringify({ bytes: Math.max(0, used - freed) }) },
      ],
      fence,
    );
  }
}
