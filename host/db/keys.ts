/**
 * The keyspace. One classic-level database holds every deployment; each concern has a leading byte,
 * then the deployment id, so a deployment's keys are one contiguous range and nothing built from a
 * capsule's table or index names can reach another deployment's keys (names are encoded, never
 * concatenated raw).
 *
 *   rows:    0x10 S(deploy) S(table) S(id)                              -> row JSON
 *   indexes: 0x11 S(deploy) S(table) S(indexStorageId) E(f)... E(createdAt) I(id) -> row JSON
 *   meta:    0x12 S(deploy) S(name)                                     -> JSON
 *   idempotency keys: 0x12 S(deploy) S("idempotency") N(window) S(caller) S(key) -> outcome JSON
 *   host:    0x13 S(name)                                               -> JSON (host-wide)
 *   counts:  0x14 S(deploy) S(table) S(indexStorageId) E(f)...              -> entries under that prefix
 *
 * A count key is an index key prefix (an index's own followed by the values of its first fields;
 * for `by_creation`, its own alone: the table's size) with the counts byte in front instead of the
 * indexes byte: `count()` over equalities on leading fields reads one key instead of walking every
 * entry (see {@link countKeyOf}).
 */
import { encodeNumber, encodeText, TAG_ID } from "./codec.js";

const ROWS = 0x10;
const INDEXES = 0x11;
const META = 0x12;
const HOST = 0x13;
const COUNTS = 0x14;

function join(parts: Buffer[]): Buffer {
  return Buffer.concat(parts);
}

/** Prefix of every row of `table`. */
export function rowPrefix(deployment: string, table: string): Buffer {
  return join([Buffer.from([ROWS]), encodeText(deployment), encodeText(table)]);
}

/** Key of row `id` under its table's {@link rowPrefix} (compiled tables keep theirs). */
export function rowKeyUnder(prefix: Buffer, id: string): Buffer {
  return join([prefix, encodeText(id, TAG_ID)]);
}

/** Prefix of every entry of one stored index (indexes are stored under a storage id, not their name). */
export function indexPrefix(deployment: string, table: string, storageId: string): Buffer {
  return join([Buffer.from([INDEXES]), encodeText(deployment), encodeText(table), encodeText(storageId)]);
}

/** The count key of an index key prefix (see the layout above): same bytes, counts byte first. */
export function countKeyOf(indexKeyPrefix: Buffer): Buffer {
  const key = Buffer.from(indexKeyPrefix);
  key[0] = COUNTS;
  return key;
}

/**
 * The count key of `indexKey`'s first `end` bytes as a latin1 string (one character per byte): what
 * writes tally counts under, cheap as a `Map` key; `Buffer.from(name, "latin1")` is the key.
 */
export function countNameOf(indexKey: Buffer, end: number): string {
  return String.fromCharCode(COUNTS) + indexKey.toString("latin1", 1, end);
}

/** Key of one deployment-level metadata record (schema, clock, ...). */
export function metaKey(deployment: string, name: string): Buffer {
  return join([Buffer.from([META]), encodeText(deployment), encodeText(name)]);
}

/**
 * Prefix of a deployment's idempotency records (see host/deployments/idempotency.ts). Records are
 * filed under the time window they were written in, so expired ones are one range to delete.
 */
export function idempotencyPrefix(deployment: string): Buffer {
  return metaKey(deployment, "idempotency");
}

/** Prefix of the idempotency records written in `window` (a number of windows since the epoch). */
export function idempotencyWindowPrefix(deployment: string, window: number): Buffer {
  return join([idempotencyPrefix(deployment), encodeNumber(window)]);
}

/** Key of the record of idempotency key `key` sent by `caller`, written in `window`. */
export function idempotencyRecordKey(
  deployment: string,
  window: number,
  caller: string,
  key: string,
): Buffer {
  return join([idempotencyWindowPrefix(deployment, window), encodeText(caller), encodeText(key)]);
}

/** Key of one host-wide metadata record (the cursor key, ...). */
export function hostKey(name: string): Buffer {
  return join([Buffer.from([HOST]), encodeText(name)]);
}

/** Prefix of everything a deployment stores in one concern, for deleting a deployment. */
export function deploymentPrefixes(deployment: string): Buffer[] {
  return [ROWS, INDEXES, META, COUNTS].map((tag) => join([Buffer.from([tag]), encodeText(deployment)]));
}

/**
 * The range holding every key the host writes (each begins with one of the concern bytes above,
 * never 0x00 or 0xFF): what a host backup copies.
 */
export function everyKey(): { gte: Buffer; lt: Buffer } {
  return { gte: Buffer.from([0x00]), lt: Buffer.from([0xff]) };
}
