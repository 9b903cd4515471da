import { type KvSnapshot, type KvStore, RecordStore } from "../db/index.js";
import { OBJECT_NAMESPACES } from "./object-keys.js";
import type { ObjectRecord } from "./objects.js";

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
