import { randomBytes } from "node:crypto";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { checkObjectDelete, type ObjectDeleter } from "../access/index.js";
import type { HostDatabase, RecordStore } from "../db/index.js";
import { BlobDeletions, type BlobHold } from "./blob-deletions.js";
import type { BlobStore } from "./blob-store.js";
import { blockedContentReason, isBlockedDeclaredType } from "./blocked-types.js";
import { MARKUP_RULES_VERSION } from "./markup-script.js";
import { type ObjectDownload, objectDownload, recordedBytes } from "./object-downloads.js";
import { chargedBytes, listingId, OBJECT_NAMESPACES, quotaLockName } from "./object-keys.js";
import {
  checkObjectId,
  DEFAULT_STORAGE_LIMITS,
  fileTooLarge,
  inMebibytes,
  type StorageLimits,
} from "./object-limits.js";
import { chargeOf, type ObjectRecord, type StorageHolder, type Visibility } from "./object-records.js";
import { checkUploadedContentType } from "./stored-text.js";

/** Object records removed per batch when a deployment is deleted. */
const PURGE_BATCH = 500;

/**
 * Object records, bytes and quota. The bytes go to the blob store first; the record, the
 * newest-first listing entry and the owner's usage are then written in ONE batch under the owner's
 * lock, so two uploads cannot both take the last free byte and a crash never leaves a record
 * without bytes or bytes counted twice (at worst unreferenced bytes, never counted).
 */
export class ObjectService {
  private readonly records: RecordStore<ObjectRecord>;
  private readonly byTime: RecordStore<{ key: string }>;
  private readonly usage: RecordStore<{ bytes: number }>;
  private readonly totals: RecordStore<{ count: number; bytes: number }>;
  /** Every removal of bytes goes through it, so a host backup can hold them (blob-deletions.ts). */
  private readonly deletions: BlobDeletions;
  constructor(
    private readonly db: HostDatabase,
    readonly blobs: BlobStore,
    /**
     * Whose quota deployment `id` charges now, and its incarnation, read from the store (undefined:
     * deleted). An upload checks both under the quota lock, so one authorised before a deletion
     * cannot store a record after the deletion purged the deployment's objects, nor into a new
     * deployment with its id (the same developer's included).
     */
    private readonly quotaOwnerOf: (id: string) => Promise<StorageHolder | undefined>,
    readonly limits: StorageLimits = DEFAULT_STORAGE_LIMITS,
  ) {
    this.records = db.records<ObjectRecord>(OBJECT_NAMESPACES.records);
    this.byTime = db.records<{ key: string }>(OBJECT_NAMESPACES.byTime);
    this.usage = db.records<{ bytes: number }>(OBJECT_NAMESPACES.usage);
    this.totals = db.records<{ count: number; bytes: number }>(OBJECT_NAMESPACES.totals);
    this.deletions = new BlobDeletions(blobs, async (key) => (await this.records.get(key)) !== undefined);
  }

  /**
   * Holds removals of object bytes until released: a host backup copies the bytes of every record
   * in its snapshot, including objects deleted since (see blob-deletions.ts).
   */
  holdDeletions(): BlobHold {
    return this.deletions.hold();
  }

  /** Whether the bytes under blob key `key` are deleted but kept for a running backup (see {@link holdDeletions}). */
  removalHeld(key: string): boolean {
    return this.deletions.isHeld(key);
  }

  /** Notes bytes just written under blob key `key`, for the holds of running backups. */
  bytesWritten(key: string): void {
    this.deletions.written(key);
  }

  /** Removes the bytes under blob key `key` (now, or after the running backups; see {@link holdDeletions}). */
  deleteBytes(key: string): Promise<void> {
    return this.deletions.delete(key);
  }

  /**
   * The owner's quota lock: held in this process and against every other host sharing the
   * database, so usage read under it is exact and two uploads cannot both take the last free byte.
   */
  private lock(owner: string): { run<T>(work: () => Promise<T>): Promise<T> } {
    return { run: (work) => this.db.exclusive(quotaLockName(owner), work) };
  }

  private timeId(record: ObjectRecord): string {
    return listingId(record);
  }

  /** Checks and stores an upload; returns its record. */
  async upload(input: {
    deployment: string;
    quotaOwner: string;
    /** The incarnation of the deployment the upload was authorised for (`DeploymentRecord.incarnation`). */
    incarnation: string | null;
    visibility: Visibility;
    contentType: string;
    bytes: Buffer;
    uploaderId: string;
    uploaderEmail: string | null;
  }): Promise<ObjectRecord> {
    if (input.bytes.length > this.limits.fileSize) throw fileTooLarge(this.limits.fileSize);
    checkUploadedContentType(input.contentType);
    if (isBlockedDeclaredType(input.contentType)) {
      throw new PlatformError(
        "blocked_type",
        `Files of type ${input.contentType} cannot be stored (executables, installers, scripts, HTML and JavaScript are blocked).`,
      );
    }
    const reason = await blockedContentReason(input.bytes, input.contentType, input.deployment);
    if (reason) throw new PlatformError("blocked_type", `This file cannot be stored: ${reason}.`);
    const id = randomBytes(16).toString("base64url");
    const record: ObjectRecord = {
      deployment: input.deployment,
      key: `${input.visibility}/${id}`,
      visibility: input.visibility,
      id,
      size: input.bytes.length,
      contentType: input.contentType,
      uploaderId: input.uploaderId,
      uploaderEmail: input.uploaderEmail,
      uploadedAt: Date.now(),
      quotaOwner: input.quotaOwner,
      markupRules: MARKUP_RULES_VERSION,
      charged: chargedBytes(input.bytes.length),
    };
    const blobKey = `${record.deployment}/${record.key}`;
    try {
      await this.blobs.put(blobKey, input.bytes);
      this.deletions.written(blobKey);
    } catch (error) {
      throw new PlatformError("unavailable", "Storage is temporarily unavailable; retry later.", {
        cause: error,
      });
    }
    try {
      await this.lock(input.quotaOwner).run(async () => {
        const holder = await this.quotaOwnerOf(record.deployment);
        if (holder?.quotaOwner !== input.quotaOwner || holder.incarnation !== input.incarnation)
          throw new PlatformError("not_found", `Deployment ${record.deployment} was deleted.`);
        const used = (await this.usage.get(input.quotaOwner))?.bytes ?? 0;
        const charged = chargeOf(record);
        if (used + charged > this.limits.perDeveloper) {
          throw new PlatformError(
            "quota_exceeded",
            `The developer's storage is full (${this.limits.perDeveloper} bytes, ${inMebibytes(LIMITS.storagePerDeveloper)}; each file counts ${LIMITS.storageBytesPerFile} bytes at least); delete files to free space.`,
          );
        }
        const totals = (await this.totals.get(record.deployment)) ?? { count: 0, bytes: 0 };
        await this.records.batch(
          [{ id: `${record.deployment}/${record.key}`, value: record }],
          [
            { key: this.byTime.key(this.timeId(record)), value: JSON.stringify({ key: record.key }) },
            { key: this.usage.key(input.quotaOwner), value: JSON.stringify({ bytes: used + charged }) },
            {
              key: this.totals.key(record.deployment),
              value: JSON.stringify({ count: totals.count + 1, bytes: totals.bytes + record.size }),
            },
          ],
        );
      });
    } catch (error) {
      await this.deleteBytes(blobKey).catch(() => {});
      throw error;
    }
    return record;
  }

  /** The record of `<visibility>/<id>` in `deployment`, or undefined. */
  record(deployment: string, visibility: Visibility, id: string): Promise<ObjectRecord | undefined> {
    return this.records.get(`${deployment}/${visibility}/${checkObjectId(id)}`);
  }

  /** What a download of `record` sends, and how (see object-downloads.ts). */
  download(record: ObjectRecord): Promise<ObjectDownload> {
    return objectDownload(this, record);
  }

  /**
   * Notes in `record` that its bytes passed today's script check (an object stored before the
   * rules' version was kept), under its owner's quota lock: a deleted object is not written back.
   */
  async markChecked(record: ObjectRecord): Promise<void> {
    await this.lock(record.quotaOwner).run(async () => {
      const id = `${record.deployment}/${record.key}`;
      const current = await this.records.get(id);
      if (!current || current.markupRules === MARKUP_RULES_VERSION) return;
      await this.records.put(id, Object.assign(current, { markupRules: MARKUP_RULES_VERSION }));
    });
  }

  /** The bytes of a recorded object. */
  bytes(record: ObjectRecord): Promise<Buffer> {
    return recordedBytes(record, (key) => this.blobs.get(key));
  }

  /**
   * Deletes `<visibility>/<id>` (idempotent: a missing object is fine) if `deleter` may (see
   * `checkObjectDelete`: the owner any object, an app user only their own). Frees its bytes from
   * the owner's quota in the same batch.
   */
  async remove(
    deployment: string,
    visibility: Visibility,
    id: string,
    deleter: ObjectDeleter,
  ): Promise<boolean> {
    const existing = await this.record(deployment, visibility, id);
    if (!existing) return false;
    checkObjectDelete(deleter, existing);
    const removed = await this.lock(existing.quotaOwner).run(async () => {
      const record = await this.record(deployment, visibility, id);
      if (!record) return false;
      const used = (await this.usage.get(record.quotaOwner))?.bytes ?? 0;
      const totals = (await this.totals.get(deployment)) ?? { count: 1, bytes: record.size };
      await this.records.batch(
        [{ id: `${deployment}/${record.key}`, value: null }],
        [
          { key: this.byTime.key(this.timeId(record)), value: null },
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
      );
      return true;
    });
    if (removed) await this.deleteBytes(`${deployment}/${visibility}/${id}`).catch(() => {});
    return removed;
  }

  /** How many objects a deployment stores and their bytes (one record read; the dashboard's list). */
  async deploymentTotals(deployment: string): Promise<{ count: number; bytes: number }> {
    return (await this.totals.get(deployment)) ?? { count: 0, bytes: 0 };
  }

  /** The newest objects of a deployment (at most the listing limit) and its totals. */
  async list(
    deployment: string,
  ): Promise<{ objects: ObjectRecord[]; totals: { count: number; bytes: number }; truncated: boolean }> {
    const entries = await this.byTime.listPrefix(`${deployment}/`, this.limits.listing);
    const objects = (
      await Promise.all(entries.map(({ key }) => this.records.get(`${deployment}/${key}`)))
    ).filter((r): r is ObjectRecord => r !== undefined);
    const totals = (await this.totals.get(deployment)) ?? { count: 0, bytes: 0 };
    return { objects, totals, truncated: totals.count > objects.length };
  }

  /**
   * Removes every object of deleted deployment `deployment`: records and listing entries leave in
   * the same batch that frees their bytes from each quota owner's usage (so a rerun after a crash
   * never frees bytes twice), then the totals, then the bytes, including any a crash left behind.
   * Taking `quotaOwner`'s lock first lets an upload that passed its check before the deletion
   * finish writing its record, so the listing below sees it (later uploads see the deployment gone).
   */
  async purgeDeployment(deployment: string, quotaOwner: string): Promise<void> {
    const prefix = `${deployment}/`;
    await this.lock(quotaOwner).run(async () => {});
    for (;;) {
      const found = await this.records.listPrefix(prefix, PURGE_BATCH);
      if (found.length === 0) break;
      for (const owner of new Set(found.map((record) => record.quotaOwner)))
        await this.lock(owner).run(() => this.purgeOwned(deployment, owner, found));
    }
    await this.byTime.deletePrefix(prefix);
    await this.totals.delete(deployment);
    for (const key of await this.blobs.list(prefix)) await this.deleteBytes(key);
  }

  /** Under `owner`'s lock: drops the still-present records of `found` owned by `owner`, freeing their bytes. */
  private async purgeOwned(deployment: string, owner: string, found: ObjectRecord[]): Promise<void> {
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
        ...present.map((record) => ({ key: this.byTime.key(this.timeId(record)), value: null })),
        { key: this.usage.key(owner), value: JSON.stringify({ bytes: Math.max(0, used - freed) }) },
      ],
    );
  }

  /** Bytes counted against each quota owner, for the first `limit` owners in id order (metrics). */
  async usageByOwner(limit: number): Promise<Array<[owner: string, bytes: number]>> {
    return (await this.usage.entries(limit)).map(([owner, usage]) => [owner, usage.bytes]);
  }

  /** Bytes counted against a developer. */
  async used(owner: string): Promise<number> {
    return (await this.usage.get(owner))?.bytes ?? 0;
  }
}
