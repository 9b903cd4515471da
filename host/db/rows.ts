import { LIMITS } from "../../sdk/protocol/index.js";
import {
  checkFieldValue,
  describeType,
  type FieldSpec,
  type FieldValue,
  PlatformError,
} from "../../sdk/values/index.js";
import { encodeNumber, encodeText, encodeValue, TAG_ID } from "./codec.js";
import { countNameOf } from "./keys.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";

/** A stored row: `id`, `createdAt`, then the table's fields. Never contains `null`. */
export type StoredRow = { id: string; createdAt: number } & Record<string, FieldValue>;

function badRequest(message: string): PlatformError {
  return new PlatformError("bad_request", message);
}

function asObject(table: string, value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw badRequest(`${what} for ${table} must be an object, got ${describeType(value)}.`);
  }
  return value as Record<string, unknown>;
}

function rejectUnknownFields(table: CompiledTable, input: Record<string, unknown>): void {
  for (const key of Object.keys(input)) {
    if (key === "id" || key === "createdAt")
      throw badRequest(`${table.name}.${key} is set by the database and cannot be written.`);
    if (!Object.hasOwn(table.spec.fields, key)) throw badRequest(`Unknown field ${table.name}.${key}.`);
  }
}

/** Validates one field for a write; `null`/`undefined` mean "no value" and yield the default. */
function resolveField(
  table: CompiledTable,
  name: string,
  spec: FieldSpec,
  value: unknown,
): FieldValue | undefined {
  if (value === null || value === undefined) {
    if (spec.default !== undefined) return spec.default;
    if (spec.optional) return undefined;
    throw new PlatformError("bad_request", `Missing value for ${table.name}.${name}`);
  }
  return checkFieldValue(table.name, name, spec, value);
}

/** The fields of a new row, validated, with defaults filled, in schema order. */
export function buildInsertFields(table: CompiledTable, input: unknown): Record<string, FieldValue> {
  const row = asObject(table.name, input, "An inserted row");
  rejectUnknownFields(table, row);
  // The fields it names and those filled without it, in schema order (the first problem in that
  // order is the one reported).
  const names = new Set(table.filledFields);
  for (const key of Object.keys(row)) names.add(key);
  const ordered = [...names].sort((a, b) => (table.position.get(a) ?? 0) - (table.position.get(b) ?? 0));
  const out: Record<string, FieldValue> = {};
  for (const name of ordered) {
    const value = resolveField(table, name, table.spec.fields[name] as FieldSpec, row[name]);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The row after applying `patch`: `null` clears an optional field (or restores its default). */
export function applyPatch(table: CompiledTable, existing: StoredRow, patch: unknown): StoredRow {
  const changes = asObject(table.name, patch, "An update");
  rejectUnknownFields(table, changes);
  const next: StoredRow = { ...existing };
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) continue;
    const resolved = resolveField(table, name, table.spec.fields[name] as FieldSpec, value);
    if (resolved === undefined) delete next[name];
    else next[name] = resolved;
  }
  return next;
}

/** Fields of `row` holding ids whose value differs from `before` (all of them for inserts). */
export function changedIdFields(
  table: CompiledTable,
  row: Record<string, FieldValue>,
  before?: StoredRow,
): Array<[string, string, string]> {
  const out: Array<[string, string, string]> = [];
  for (const name of table.idFields) {
    const spec = table.spec.fields[name] as FieldSpec;
    const value = row[name];
    if (typeof value === "string" && before?.[name] !== value) {
      out.push([name, spec.table as string, value]);
    }
  }
  return out;
}

/**
 * True when a row was stored by the legacy runtime: its `createdAt` is an ISO 8601 string. Such rows
 * are never rewritten by an upgrade; v1 reads see `createdAt` as epoch milliseconds (the string
 * parsed with `Date.parse`), and index entries built from them carry that number.
 */
export function hasLegacyCreatedAt(json: string): boolean {
  return json.includes('"createdAt":"');
}

/** Parses stored row JSON in v1 form: a legacy ISO `createdAt` becomes epoch milliseconds. */
export function parseStoredRow(json: string): StoredRow {
  const row = JSON.parse(json) as StoredRow;
  if (typeof (row.createdAt as unknown) === "string")
    row.createdAt = Date.parse(row.createdAt as unknown as string);
  return row;
}

/**
 * What an index entry built from stored row JSON holds (backfills and imports build them so): the
 * row as stored, or its v1 form when `createdAt` is legacy. Every write stores v1 rows, whose
 * entries hold the same JSON as the row.
 */
export function indexEntryValue(json: string): string {
  return hasLegacyCreatedAt(json) ? JSON.stringify(parseStoredRow(json)) : json;
}

/** Fills defaults added after this row was stored (a defaulted field always has a value). */
export function materialize(table: CompiledTable, row: StoredRow): StoredRow {
  for (const [name, value] of table.lateDefaults) if (row[name] === undefined) row[name] = value;
  return row;
}

/**
 * Row JSON as v1 handlers see it: unchanged unless defaults must be filled or `createdAt` is
 * legacy. Defaults are added to the text, not by parsing it: a row is one flat object written by
 * `JSON.stringify`, so `,"name":` (or `{"name":` first) appears in it only as its own field's key
 * (inside a string every quote is escaped). Parsing and writing each row again held the main
 * thread 97 ms a read of 3.6 MB of 1000-field rows, against 10 ms before the default was added.
 */
export function materializeJson(table: CompiledTable, json: string): string {
  if (hasLegacyCreatedAt(json)) return JSON.stringify(materialize(table, parseStoredRow(json)));
  if (table.lateDefaults.length === 0) return json;
  let added = "";
  for (const [name, value] of table.lateDefaults) {
    const key = JSON.stringify(name);
    if (!json.includes(`,${key}:`) && !json.startsWith(`{${key}:`))
      added += `,${key}:${JSON.stringify(value)}`;
  }
  return added === "" ? json : `${json.slice(0, -1)}${added}}`;
}

/** Rows of a scan as handlers see them (see {@link materializeJson}); the same array when nothing changes. */
export function materializeAll(table: CompiledTable, rows: string[]): string[] {
  return table.lateDefaults.length === 0 ? rows : rows.map((json) => materializeJson(table, json));
}

/**
 * One index entry of a row: its key, and the count keys it adds to (none when not counted), as
 * latin1 names (see {@link countNameOf}).
 */
export interface IndexEntry {
  key: Buffer;
  counts: readonly string[];
}

const NO_COUNTS: readonly string[] = [];

/**
 * Bytes of the keys `entries` write: each entry's key and the names of the counts it moves. A
 * mutation holds them until its commit, so its write budget counts them beside the rows' bytes:
 * 32 indexes of 16 fields over a 2 KB string move 512 counts of 2 KB a row, and 230 such rows,
 * within the budget as rows alone, held 550 MiB of the host's heap (an attack review,
 * 2026-12-06).
 */
export function keyBytesOf(entries: readonly IndexEntry[]): number {
  let bytes = 0;
  for (const entry of entries) {
    bytes += entry.key.length;
    for (const name of entry.counts) bytes += name.length;
  }
  return bytes;
}

/**
 * `row`'s entry in `index`: the key is the field values, then `createdAt`, then `id`. A counted
 * index's entry adds to the count of each prefix of it that ends after a field value, from
 * `countsFrom` fields up to all of them (keys.ts): the keys `count()` reads for equalities on
 * leading fields. `by_creation` counts its whole prefix: the table's size.
 */
export function indexEntry(index: CompiledIndex, row: StoredRow): IndexEntry {
  const parts = entryParts(index, row);
  const key = Buffer.concat(parts);
  if (!index.counted) return { key, counts: NO_COUNTS };
  const counts: string[] = [];
  let end = 0;
  for (let i = 0; i <= index.fields.length; i++) {
    end += (parts[i] as Buffer).length;
    if (i >= index.countsFrom) counts.push(countNameOf(key, end));
  }
  return { key, counts };
}

/** Refuses (`400 bad_request`) an index entry of `table` whose key PostgreSQL could not index. */
function checkIndexKey(tableName: string, index: CompiledIndex, entry: IndexEntry): void {
  if (entry.key.length > LIMITS.indexKeyBytes)
    throw new PlatformError(
      "bad_request",
      `A row of ${tableName} is too long to index in ${index.name}: its entry would be ${entry.key.length} bytes, at most ${LIMITS.indexKeyBytes} (LIMITS.indexKeyBytes). Index a shorter value instead, such as a prefix or a hash of it.`,
    );
}

/**
 * `index`'s entry for a row written now into an index that does not hold it yet (a backfill, an
 * import), refused when its key is over {@link LIMITS.indexKeyBytes}: PostgreSQL cannot index it.
 */
export function newIndexEntry(tableName: string, index: CompiledIndex, row: StoredRow): IndexEntry {
  const entry = indexEntry(index, row);
  checkIndexKey(tableName, index, entry);
  return entry;
}

/**
 * Checks the entries of `entries` (a row's, in the order of its table's indexes) that `isNew`
 * accepts, as {@link newIndexEntry} does: an entry a row already has is never refused, so a row
 * stored before the limit can still be changed on its other fields, and deleted.
 */
export function checkNewIndexKeys(
  table: CompiledTable,
  entries: IndexEntry[],
  isNew: (entry: IndexEntry, at: number) => boolean,
): void {
  let at = 0;
  for (const index of table.indexes.values()) {
    const entry = entries[at] as IndexEntry;
    if (isNew(entry, at)) checkIndexKey(table.name, index, entry);
    at++;
  }
}

/** The key of `row`'s entry in `index` (see {@link indexEntry}). */
export function indexEntryKey(index: CompiledIndex, row: StoredRow): Buffer {
  return Buffer.concat(entryParts(index, row));
}

/** The pieces of an index key: the index's prefix, each field value, `createdAt`, `id`. */
function entryParts(index: CompiledIndex, row: StoredRow): Buffer[] {
  const parts: Buffer[] = [index.prefix];
  for (let i = 0; i < index.fields.length; i++) {
    parts.push(encodeValue(row[index.fields[i] as string], index.isId[i]));
  }
  parts.push(encodeNumber(row.createdAt), encodeText(row.id, TAG_ID));
  return parts;
}

/** Every index entry of `row` (defaults materialized first), in the order of the table's indexes. */
export function indexEntries(table: CompiledTable, row: StoredRow): IndexEntry[] {
  const full = materialize(table, { ...row });
  const entries: IndexEntry[] = [];
  for (const index of table.indexes.values()) entries.push(indexEntry(index, full));
  return entries;
}

/** The keys of every index entry of `row` (defaults materialized first). */
export function indexEntryKeys(table: CompiledTable, row: StoredRow): Buffer[] {
  return indexEntries(table, row).map((entry) => entry.key);
}
