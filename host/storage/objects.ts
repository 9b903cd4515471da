import { randomBytes } from "node:crypto";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { ObjectDeleter } from "../access/index.js";
import {
  type FencedWork,
  type HostDatabase,
  incarnationKey,
  type LockFence,
  type RecordStore,
  replacedError,
  servesIncarnation,
} from "../db/index.js";
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
import {
  chargeOf,
  type ObjectRecord,
  type StorageHolder,
  type StorageScope,
  type Visibility,
} from "./object-records.js";
import { ObjectRemovals } from "./object-removals.js";
import { checkUploadedContentType } from "./stored-text.js";

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
  /** Deletions of one object or of a deleted deployment's every object (object-removals.ts). */
  private readonly removals: ObjectRemovals;
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
    this.removals = new ObjectRemovals(db, blobs, this.deletions);
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
   * Refuses (`not_found`, "was deleted") work on `scope`'s files unless the store's record of its
   * id is the incarnation the caller was allowed for, and tells this host its record changed (read
   * again, as a refusal of its data makes it: host/db/incarnation.ts). A host that had not heard of
   * a deletion held the old record: its developer listed, downloaded and deleted the files of the
   * deployment created under the id since, another tenant's, and so did the sessions they minted
   * (test/stale-incarnation-storage.test.ts). Called after the work read its records: a file found
   * was stored for the incarnation the store names by then (an upload checks it under the lock).
   * The mark the deployment's data carries is read, a few bytes, not its record: a record holds its
   * declaration and env, megabytes to parse on every download of a public file.
   */
  private async confirm(scope: StorageScope): Promise<void> {
    const marked = await this.db.store.get(incarnationKey(scope.id));
    if (servesIncarnation(marked, scope.incarnation ?? null)) return;
    this.refuse(scope.id);
  }

  /** Tells this host `id`'s record changed (read again), and refuses the caller (see {@link confirm}). */
  private refuse(id: string): never {
    this.db.changedUnheard(id);
    throw replacedError(id);
  }

  /** The owner's stored bytes, after refusing (`quota_exceeded`) a file charged `charged` more than fits. */
  private async checkRoom(owner: string, charged: number): Promise<number> {
    const used = (await this.usage.get(owner))?.bytes ?? 0;
    if (used + charged > this.limits.perDeveloper) {
      throw new PlatformError(
        "quota_exceeded",
        `The developer's storage is full (${this.limits.perDeveloper} bytes, ${inMebibytes(LIMITS.storagePerDeveloper)}; each file counts ${LIMITS.storageBytesPerFile} bytes at least); delete files to free space.`,
      );
    }
    return used;
  }

  /**
   * The owner's quota lock: held in this process and against every other host sharing the
   * database, so usage read under it is exact and two uploads cannot both take the last free byte.
   */
  private lock(owner: string): { run<T>(work: FencedWork<T>): Promise<T> } {
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
    const charged = chargeOf(record);
    // Checked again under the lock; a full store is refused before its bytes are written.
    await this.checkRoom(input.quotaOwner, charged);
    try {
      await this.blobs.put(blobKey, input.bytes);
      this.deletions.written(blobKey);
    } catch (error) {
      // A put that timed out may still have landed: bytes no record names and nothing would count.
      this.deletions.written(blobKey);
      void this.deleteBytes(blobKey).catch(() => {});
      throw new PlatformError("unavailable", "Storage is temporarily unavailable; retry later.", {
        cause: error,
      });
    }
    try {
      await this.lock(input.quotaOwner).run(async (fence) => {
        const holder = await this.quotaOwnerOf(record.deployment);
        if (holder?.quotaOwner !== input.quotaOwner || holder.incarnation !== input.incarnation)
          this.refuse(record.deployment);
        const used = await this.checkRoom(input.quotaOwner, charged);
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
          fence,
        );
      });
    } catch (error) {
      await this.deleteBytes(blobKey).catch(() => {});
      throw error;
    }
    return record;
  }

  /** The record of `<visibility>/<id>` in `scope`'s deployment, or undefined (see {@link confirm}). */
  async record(scope: StorageScope, visibility: Visibility, id: string): Promise<ObjectRecord | undefined> {
    const found = await this.records.get(`${scope.id}/${visibility}/${checkObjectId(id)}`);
    await this.confirm(scope);
    return found;
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
    await this.lock(record.quotaOwner).run(async (fence) => {
      const id = `${record.deployment}/${record.key}`;
      const current = await this.records.get(id);
      if (!current || current.markupRules === MARKUP_RULES_VERSION) return;
      await this.records.put(id, Object.assign(current, { markupRules: MARKUP_RULES_VERSION }), fence);
    });
  }

  /** The bytes of a recorded object. */
  bytes(record: ObjectRecord): Promise<Buffer> {
    return recordedBytes(record, (key) => this.blobs.get(key));
  }

  /** Deletes `<visibility>/<id>` of `scope` if `deleter` may (see {@link ObjectRemovals.remove}, {@link confirm}). */
  remove(scope: StorageScope, visibility: Visibility, id: string, deleter: ObjectDeleter): Promise<boolean> {
    return this.removals.remove(scope.id, visibility, id, deleter, () => this.confirm(scope));
  }

  /** How many objects a deployment stores and their bytes (one record read; the dashboard's list; see {@link confirm}). */
  async deploymentTotals(scope: StorageScope): Promise<{ count: number; bytes: number }> {
    const totals = (await this.totals.get(scope.id)) ?? { count: 0, bytes: 0 };
    await this.confirm(scope);
    return totals;
  }

  /** The newest objects of a deployment (at most the listing limit) and its totals (see {@link confirm}). */
  async list(
    scope: StorageScope,
  ): Promise<{ objects: ObjectRecord[]; totals: { count: number; bytes: number }; truncated: boolean }> {
    const deployment = scope.id;
    const entries = await this.byTime.listPrefix(`${deployment}/`, this.limits.listing);
    const objects = (
      await Promise.all(entries.map(({ key }) => this.records.get(`${deployment}/${key}`)))
    ).filter((r): r is ObjectRecord => r !== undefined);
    const totals = (await this.totals.get(deployment)) ?? { count: 0, bytes: 0 };
    await this.confirm(scope);
    return { objects, totals, truncated: totals.count > objects.length };
  }

  /** Removes every object of deleted deployment `deployment` (see {@link ObjectRemovals.purgeDeployment}). */
  purgeDeployment(deployment: string, quotaOwner: string, lifecycle?: LockFence): Promise<void> {
    return this.removals.purgeDeployment(deployment, quotaOwner, lifecycle);
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
