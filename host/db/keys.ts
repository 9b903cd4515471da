/**
 * The keyspace. One classic-level database holds every deployment; each concern has a leading byte,
 * then the deployment id, so a deployment's keys are one contiguous range and nothing built from a
 * capsule's table or index names can reach another deployment's keys (names are encoded, never
 * concatenated raw).
 *
 *   rows:    0x10 S(deploy) S(table) S(id)                              -> row JSON
 *   indexes: 0x11 S(deploy) S(table) S(indexStorageId) E(f)... E(createdAt) I(id) -> row JSON
 *   meta:    0x12 S(deploy) S(name)                                     -> JSON
 *   host:    0x13 S(name)                                               -> JSON (host-wide)
 */
import { encodeText, TAG_ID } from "./codec.js";

const ROWS = 0x10;
const INDEXES = 0x11;
const META = 0x12;
const HOST = 0x13;

function join(parts: Buffer[]): Buffer {
  return Buffer.concat(parts);
}

/** Prefix of every row of `table`. */
export function rowPrefix(deployment: string, table: string): Buffer {
  return join([Buffer.from([ROWS]), encodeText(deployment), encodeText(table)]);
}

/** Key of one row. */
export function rowKey(deployment: string, table: string, id: string): Buffer {
  return rowKeyUnder(rowPrefix(deployment, table), id);
}

/** Key of row `id` under its table's {@link rowPrefix} (compiled tables keep theirs). */
export function rowKeyUnder(prefix: Buffer, id: string): Buffer {
  return join([prefix, encodeText(id, TAG_ID)]);
}

/** Prefix of every entry of one stored index (indexes are stored under a storage id, not their name). */
export function indexPrefix(deployment: string, table: string, storageId: string): Buffer {
  return join([Buffer.from([INDEXES]), encodeText(deployment), encodeText(table), encodeText(storageId)]);
}

/** Key of one deployment-level metadata record (schema, clock, ...). */
export function metaKey(deployment: string, name: string): Buffer {
  return join([Buffer.from([META]), encodeText(deployment), encodeText(name)]);
}

/** Key of one host-wide metadata record (the cursor key, ...). */
export function hostKey(name: string): Buffer {
  return join([Buffer.from([HOST]), encodeText(name)]);
}

/** Prefix of everything a deployment stores in one concern, for deleting a deployment. */
export function deploymentPrefixes(deployment: string): Buffer[] {
  return [ROWS, INDEXES, META].map((tag) => join([Buffer.from([tag]), encodeText(deployment)]));
}
