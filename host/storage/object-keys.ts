import { LIMITS } from "../../sdk/protocol/index.js";

/**
 * Where object storage keeps its records in the host's database, shared by the object service and
 * export/import (object-transfer.ts), so both write the same keys under the same lock.
 */

/** Record namespaces: object records, the newest-first listing, usage per quota owner, totals per deployment. */
export const OBJECT_NAMESPACES = {
  records: "objects",
  byTime: "objects-by-time",
  usage: "storage-usage",
  totals: "storage-totals",
} as const;

const NEWEST_FIRST = 9_999_999_999_999;

/** What an object of `size` bytes counts against its owner's quota (`LIMITS.storageBytesPerFile` at least). */
export function chargedBytes(size: number): number {
  return Math.max(size, LIMITS.storageBytesPerFile);
}

/** The listing id of an object: newest first within its deployment. */
export function listingId(record: { deployment: string; uploadedAt: number; id: string }): string {
  return `${record.deployment}/${String(NEWEST_FIRST - record.uploadedAt).padStart(13, "0")}/${record.id}`;
}

/** The name of quota owner `owner`'s lock (held across hosts while its usage is read and written). */
export function quotaLockName(owner: string): string {
  return `storage-quota:${owner}`;
}
