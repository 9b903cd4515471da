import { type KvSnapshot, type KvStore, RecordStore } from "../db/index.js";
import { OBJECT_NAMESPACES } from "./object-keys.js";

/** Public or private: public objects can be read without sign-in on open apps. */
export type Visibility = "public" | "private";

/** Whose quota a deployment's uploads are charged to now, and which incarnation of its id it is. */
export interface StorageHolder {
  quotaOwner: string;
  incarnation: string | null;
}

/**
 * The deployment a storage operation is for, as its caller was allowed for it: the id, and the
 * incarnation of the record the access check read (null: created before incarnations were kept).
 * A deployment's record is one.
 */
export interface StorageScope {
  readonly id: string;
  readonly incarnation?: string | null | undefined;
}

/** What is recorded per stored object (the specification's "stored object record" plus its metadata). */
export interface ObjectRecord {
  deployment: string;
  /** `public/<id>` or `private/<id>`. */
  key: string;
  visibility: Visibility;
  id: string;
  size: number;
  contentType: string;
  uploaderId: string;
  uploaderEmail: string | null;
  uploadedAt: number;
  /** Whose storage quota (`LIMITS.storagePerDeveloper`) the object counts against (the deployment owner). */
  quotaOwner: string;
  /**
   * The `MARKUP_RULES_VERSION` whose script check the bytes passed when stored (absent: stored
   * before versions were kept; a download of such an SVG checks it again).
   */
  markupRules?: number;
  /**
   * What the object counts against its owner's quota (`chargedBytes` of its size); absent: stored
   * before files counted 4 KiB at least, when it counted its size.
   */
  charged?: number;
}

/** What `record` counts against its owner's quota: as it was charged when stored. */
export function chargeOf(record: ObjectRecord): number {
  return record.charged ?? record.size;
}

/**
 * Every object record of `store` as of `view` (a snapshot, or the store itself), a page at a
 * time: a host backup copies their bytes, and a restore checks each has them.
 */
export function objectRecordPages(
  store: KvStore,
  view: Pick<KvSnapshot, "iterate"> = store,
): AsyncGenerator<ObjectRecord[]> {
  return new RecordStore<ObjectRecord>(store, OBJECT_NAMESPACES.records).pagesAt(view);
}

/** The blob key of `record`'s bytes. */
export function blobKeyOf(record: Pick<ObjectRecord, "deployment" | "key">): string {
  return `${record.deployment}/${record.key}`;
}
