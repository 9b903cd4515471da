import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import {
  bothFences,
  type HostDatabase,
  type KvOperation,
  type KvSnapshot,
  type LockFence,
  type RecordStore,
} from "../db/index.js";
import { type ArchivedObject, invalidArchive } from "./archived-object.js";
import { blockedContentReason } from "./blocked-types.js";
import { MARKUP_RULES_VERSION } from "./markup-script.js";
import { chargedBytes, listingId, OBJECT_NAMESPACES, quotaLockName } from "./object-keys.js";
import { chargeOf, type ObjectRecord } from "./object-records.js";
import type { ObjectService } from "./objects.js";

/** The script check's queue of every import: a deployment's id has no `:` (one named `import` shared it). */
const IMPORTS_TURN = "import:";

/** The bytes of `objects`, and what they count against a quota (each file at least its minimum). */
function sizesOf(objects: ArchivedObject[]): { bytes: number; charged: number } {
  let bytes = 0;
  let charged = 0;
  for (const object of objects) {
    bytes += object.size;
    charged += chargedBytes(object.size);
  }
  return { bytes, charged };
}

/** Final operations, each key once (the last write of a key wins). */
function distinct(operations: KvOperation[]): KvOperation[] {
  const latest = new Map<string, KvOperation>();
  for (const op of operations) latest.set(op.key.toString("latin1"), op);
  return [...latest.values()];
}

/**
 * Stored objects for export and import. Records are read from the export's snapshot; an import's
 * bytes are staged in the blob store first (the import's marker names them, so a crash leaves
 * nothing counted and nothing unswept), and its records, listing entries, totals and every quota
 * owner's usage are written in the import's one batch, under the owners' quota locks.
 */
export class ObjectTransfer {
  private readonly records: RecordStore<ObjectRecord>;
  private readonly usage: RecordStore<{ bytes: number }>;

  constructor(
    private readonly db: HostDatabase,
    readonly objects: ObjectService,
  ) {
    this.records = db.records<ObjectRecord>(OBJECT_NAMESPACES.records);
    this.usage = db.records<{ bytes: number }>(OBJECT_NAMESPACES.usage);
  }

  /** Deployment `deployment`'s object records as of `snapshot`. */
  recordsAt(snapshot: KvSnapshot, deployment: string): Promise<ObjectRecord[]> {
    return this.records.listPrefix(`${deployment}/`, Number.POSITIVE_INFINITY, snapshot);
  }

  /** Deployment `deployment`'s object records now. */
  recordsNow(deployment: string): Promise<ObjectRecord[]> {
    return this.records.listPrefix(`${deployment}/`);
  }

  /** The bytes of `record`, or undefined when they are gone (deleted since the snapshot). */
  bytesOf(record: ObjectRecord): Promise<Buffer | undefined> {
    return this.objects.blobs.get(`${record.deployment}/${record.key}`);
  }

  /** Checks an archived object's bytes as an upload's are checked: size and content. */
  async checkBytes(object: ArchivedObject, bytes: Buffer): Promise<void> {
    if (bytes.length !== object.size)
      throw invalidArchive(`the bytes of ${object.key} are not the ${object.size} its record says.`);
    // Imports take their turns at the script check together (markup-checker.ts), under a name no
    // deployment's uploads can have (their own turns are named by their ids).
    const reason = await blockedContentReason(bytes, object.contentType, IMPORTS_TURN);
    if (reason) throw new PlatformError("blocked_type", `Object ${object.key} cannot be stored: ${reason}.`);
  }

  /**
   * Writes `bytes` as object `key` of `deployment` unless it is a stored object (a record names
   * it) with exactly these bytes, which a `--replace` keeps; returns whether it wrote. A kept
   * object is not locked: {@link keptObjectsGone} checks under the quota locks that it is still
   * there. Other bytes of a stored object are refused: overwriting them would change it; so are
   * other bytes of one deleted while a host backup still copies its bytes.
   */
  async stage(deployment: string, key: string, bytes: Buffer): Promise<boolean> {
    const blobKey = `${deployment}/${key}`;
    const present = await this.objects.blobs.get(blobKey);
    if (present && (await this.records.get(blobKey))) {
      if (present.equals(bytes)) return false;
      throw new PlatformError("conflict", `Object ${key} exists in ${deployment} with other bytes.`);
    }
    // Deleted while a host backup runs: its bytes are kept for the backup, which copies them under
    // the record its snapshot holds; other bytes written there now would go into the backup instead.
    if (present && !present.equals(bytes) && this.objects.removalHeld(blobKey))
      throw new PlatformError(
        "conflict",
        `Object ${key} of ${deployment} was deleted while a host backup runs, which still copies its bytes; import again once the backup has finished.`,
      );
    await this.objects.blobs.put(blobKey, bytes);
    this.objects.bytesWritten(blobKey);
    return true;
  }

  /**
   * Of `kept` (keys whose staging {@link stage} skipped), those whose record is not among
   * `existing` (the records read under the quota locks) or whose bytes are gone: deleted since
   * they were staged. Their bytes may still be on their way out (a delete removes them after
   * its lock), so writing them again cannot be trusted; the import must not commit their records.
   */
  async keptObjectsGone(deployment: string, kept: string[], existing: ObjectRecord[]): Promise<string[]> {
    const recorded = new Set(existing.map((record) => record.key));
    const gone: string[] = [];
    for (const key of kept)
      if (!recorded.has(key) || !(await this.objects.blobs.get(`${deployment}/${key}`))) gone.push(key);
    return gone;
  }

  /**
   * Removes staged or replaced bytes under `blobKeys` that no record names (idempotent); returns
   * the keys whose removal failed (the blob store unreachable), to be tried again later.
   */
  async sweep(blobKeys: string[]): Promise<string[]> {
    const failed: string[] = [];
    for (const blobKey of blobKeys)
      if (!(await this.records.get(blobKey)))
        await this.objects.deleteBytes(blobKey).catch(() => failed.push(blobKey));
    return failed;
  }

  /**
   * Runs `work` with deployment `deployment`'s object records, holding the quota locks of `owner`
   * and of every owner those records count against: no upload or delete changes them meanwhile.
   * `work` gets the locks' fence (all of them: see `bothFences`) for the write of what it read.
   */
  async underQuotaLocks<T>(
    deployment: string,
    owner: string,
    work: (existing: ObjectRecord[], fence?: LockFence) => Promise<T>,
  ): Promise<T> {
    for (;;) {
      const owners = [...new Set([owner, ...(await this.recordsNow(deployment)).map((r) => r.quotaOwner)])];
      owners.sort();
      const locked = new Set(owners);
      const attempt = await owners.reduceRight<
        (held?: LockFence) => Promise<{ done: true; value: T } | { done: false }>
      >(
        (inner, name) => (held) =>
          this.db.exclusive(quotaLockName(name), (fence) => inner(bothFences(held, fence))),
        async (held) => {
          const existing = await this.recordsNow(deployment);
          if (existing.some((r) => !locked.has(r.quotaOwner))) return { done: false };
          return { done: true, value: await work(existing, held) };
        },
      )();
      if (attempt.done) return attempt.value;
    }
  }

  /**
   * Refuses, before any byte is staged, `incoming` objects that cannot fit `owner`'s storage even
   * once `existing` (the target deployment's records now, which they replace) is gone: staging
   * thousands of objects only to refuse them at the end costs the host their writes and deletes.
   * {@link replacement} checks again under the quota locks; this reads without them.
   */
  async checkFitsBeforeStaging(
    owner: string,
    existing: ObjectRecord[],
    incoming: ArchivedObject[],
  ): Promise<void> {
    let used = (await this.usage.get(owner))?.bytes ?? 0;
    for (const record of existing) if (record.quotaOwner === owner) used -= chargeOf(record);
    const { bytes, charged } = sizesOf(incoming);
    this.checkFits(bytes, charged, Math.max(0, used) + charged);
  }

  private checkFits(bytes: number, charged: number, used: number): void {
    if (used > this.objects.limits.perDeveloper)
      throw new PlatformError(
        "quota_exceeded",
        `The archive's objects (${bytes} bytes, counted as ${charged}: each file ${LIMITS.storageBytesPerFile} at least) do not fit the owner's storage (${this.objects.limits.perDeveloper} bytes, ${used - this.objects.limits.perDeveloper} over); delete files or import without objects.`,
      );
  }

  /**
   * The writes that replace `existing` (deployment `deployment`'s records, read under the quota
   * locks) with `incoming`, counted against `owner`: records, listing entries, totals, and the
   * usage of every owner involved. `quota_exceeded` when `owner` would go over the limit.
   */
  async replacement(
    deployment: string,
    owner: string,
    existing: ObjectRecord[],
    incoming: ArchivedObject[],
  ): Promise<KvOperation[]> {
    const usage = new Map<string, number>();
    for (const name of new Set([owner, ...existing.map((r) => r.quotaOwner)]))
      usage.set(name, (await this.usage.get(name))?.bytes ?? 0);
    const operations: KvOperation[] = [];
    const byTime = this.db.records<{ key: string }>(OBJECT_NAMESPACES.byTime);
    for (const record of existing) {
      usage.set(record.quotaOwner, Math.max(0, (usage.get(record.quotaOwner) ?? 0) - chargeOf(record)));
      operations.push({ type: "del", key: this.records.key(`${deployment}/${record.key}`) });
      operations.push({ type: "del", key: byTime.key(listingId(record)) });
    }
    const { bytes, charged } = sizesOf(incoming);
    for (const object of incoming) {
      const [visibility, id] = object.key.split("/") as ["public" | "private", string];
      // Fields in the order an upload writes them: an imported record is byte for byte the original.
      const record: ObjectRecord = {
        deployment,
        key: object.key,
        visibility,
        id,
        size: object.size,
        contentType: object.contentType,
        uploaderId: object.uploaderId,
        uploaderEmail: object.uploaderEmail,
        uploadedAt: object.uploadedAt,
        quotaOwner: owner,
        // checkBytes checked it with today's rules.
        markupRules: MARKUP_RULES_VERSION,
        charged: chargedBytes(object.size),
      };
      operations.push({
        type: "put",
        key: this.records.key(`${deployment}/${object.key}`),
        value: JSON.stringify(record),
      });
      operations.push({
        type: "put",
        key: byTime.key(listingId(record)),
        value: JSON.stringify({ key: record.key }),
      });
    }
    const used = (usage.get(owner) ?? 0) + charged;
    this.checkFits(bytes, charged, used);
    usage.set(owner, used);
    for (const [name, n] of usage)
      operations.push({ type: "put", key: this.usage.key(name), value: JSON.stringify({ bytes: n }) });
    const totals = this.db
      .records<{ count: number; bytes: number }>(OBJECT_NAMESPACES.totals)
      .key(deployment);
    operations.push(
      incoming.length === 0
        ? { type: "del", key: totals }
        : { type: "put", key: totals, value: JSON.stringify({ count: incoming.length, bytes }) },
    );
    return distinct(operations);
  }
}
