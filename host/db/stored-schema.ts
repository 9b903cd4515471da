import { CREATION_INDEX, type FieldSpec, type FieldValue, type TableSpec } from "../../sdk/values/index.js";
import { afterPrefix } from "./codec.js";
import { indexPrefix, rowPrefix } from "./keys.js";

/** One index as stored: its fields and the storage id its entries live under. */
export interface StoredIndex {
  fields: string[];
  /** Entries live under this id, not the name, so a changed index is rebuilt beside the old one. */
  storageId: string;
  /** What the entries depend on (fields, kinds, defaults); a different signature means rebuild. */
  signature: string;
  /**
   * Hidden user indexes only: rows created before this time (epoch ms) are not backfilled. Set when
   * a field became `userId()` while rows existed, so values written as plain strings are never
   * handed to a visitor by a guest upgrade (docs/capsules.md "Guest upgrade and `userId()` fields").
   */
  notBefore?: number;
  /**
   * The index keeps counts of its entries per prefix of leading field values (see keys.ts), so
   * `count()` over equalities reads one key. Indexes built before counts existed lack it; the next
   * migration rebuilds them.
   */
  counted?: boolean;
}

/** One table as stored with the deployment's schema. */
export interface StoredTable {
  spec: TableSpec;
  /** Declared indexes plus `by_creation` and the hidden `userId()` indexes. */
  indexes: Record<string, StoredIndex>;
  /** Fields whose default was added while rows existed: older rows lack them and get them on read. */
  lateDefaults: string[];
}

/** The schema a deployment currently serves, as stored in its metadata. */
export interface StoredSchema {
  hash: string;
  tables: Record<string, StoredTable>;
  /**
   * A legacy (database API v0) deployment: tables keep no index entries at all (the snapshot
   * runtime reads whole tables) and rows keep legacy `createdAt` strings.
   */
  legacy?: boolean;
}

/** The hidden index over a `userId()` field; its name cannot collide with a declared one. */
export function userIndexName(field: string): string {
  return `$user:${field}`;
}

/** Every index a table needs: declared ones, `by_creation`, and one per `userId()` field. */
export function wantedIndexes(spec: TableSpec): Record<string, string[]> {
  const out: Record<string, string[]> = { [CREATION_INDEX]: [] };
  for (const [name, fields] of Object.entries(spec.indexes)) out[name] = fields;
  for (const [name, field] of Object.entries(spec.fields)) {
    if (field.kind === "userId") out[userIndexName(name)] = [name];
  }
  return out;
}

/** The signature of an index: what its stored entries were computed from. */
export function indexSignature(spec: TableSpec, fields: string[]): string {
  return JSON.stringify(
    fields.map((name) => {
      const field = spec.fields[name] as FieldSpec;
      return [name, field.kind, field.default ?? null];
    }),
  );
}

/** An index ready for reads and writes: key prefix and the kinds of its fields. */
export interface CompiledIndex {
  name: string;
  fields: string[];
  /** Fields usable in a range: the declared ones, then `createdAt`. */
  rangeFields: string[];
  isId: boolean[];
  prefix: Buffer;
  end: Buffer;
  /**
   * Whether writes keep this index's counts and `count()` may read them (see {@link StoredIndex}).
   * Hidden indexes are never counted: no handler can query them.
   */
  counted: boolean;
  /**
   * The shortest prefix counted, in leading fields: 0 for `by_creation` (its count is the table's
   * size, which every other index shares: each row has an entry in each), 1 for the others.
   */
  countsFrom: number;
  /** Rows created before this have an entry only once written again (see {@link StoredIndex}). */
  notBefore: number | undefined;
}

/** A table ready for reads and writes. */
export interface CompiledTable {
  name: string;
  spec: TableSpec;
  fieldNames: string[];
  /** Each field's place in {@link fieldNames}. */
  position: Map<string, number>;
  /**
   * The fields an insert that omits them still sets or refuses (a default, or required), and the
   * `id()` fields, in schema order: a write loops over these and its own keys, never over every
   * field (a table of 20,000 optional fields held the main thread 9 ms an insert).
   */
  filledFields: string[];
  idFields: string[];
  rowPrefix: Buffer;
  indexes: Map<string, CompiledIndex>;
  lateDefaults: Array<[string, FieldValue]>;
}

/** Turns the stored schema into key prefixes and lookup maps for one deployment. */
export function compileSchema(deployment: string, stored: StoredSchema): Map<string, CompiledTable> {
  const tables = new Map<string, CompiledTable>();
  for (const [name, table] of Object.entries(stored.tables)) {
    const indexes = new Map<string, CompiledIndex>();
    for (const [indexName, index] of Object.entries(table.indexes)) {
      const prefix = indexPrefix(deployment, name, index.storageId);
      indexes.set(indexName, {
        name: indexName,
        fields: index.fields,
        rangeFields: [...index.fields, "createdAt"],
        isId: index.fields.map((field) => {
          const kind = table.spec.fields[field]?.kind;
          return kind === "id" || kind === "userId";
        }),
        prefix,
        end: afterPrefix(prefix),
        counted: index.counted === true && !indexName.startsWith("$"),
        countsFrom: indexName === CREATION_INDEX ? 0 : 1,
        notBefore: index.notBefore,
      });
    }
    tables.set(name, {
      name,
      spec: table.spec,
      fieldNames: Object.keys(table.spec.fields),
      position: new Map(Object.keys(table.spec.fields).map((field, at) => [field, at])),
      filledFields: Object.entries(table.spec.fields)
        .filter(([, field]) => field.default !== undefined || !field.optional)
        .map(([field]) => field),
      idFields: Object.entries(table.spec.fields)
        .filter(([, field]) => field.kind === "id")
        .map(([field]) => field),
      rowPrefix: rowPrefix(deployment, name),
      indexes,
      lateDefaults: table.lateDefaults.map((field) => [
        field,
        table.spec.fields[field]?.default as FieldValue,
      ]),
    });
  }
  return tables;
}

/** An empty schema, served by a deployment that was never migrated. */
export function emptySchema(): StoredSchema {
  return { hash: "", tables: {} };
}
