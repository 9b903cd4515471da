/**
 * The JSON form of a capsule schema. `platform/server` builders produce it, the host stores it and
 * migrates between versions of it; nothing else about a schema crosses a process boundary.
 */

/** The five scalar field types of docs/capsules.md "Schema". */
export type FieldKind = "string" | "boolean" | "number" | "id" | "userId";

/** A stored field value. Rows never store `null`; absence is the missing key. */
export type FieldValue = string | number | boolean;

/** One field of a table: its kind, whether it may be absent, and its default. */
export interface FieldSpec {
  kind: FieldKind;
  /** For `id("<table>")`: the table whose rows the id names. */
  table?: string;
  optional: boolean;
  default?: FieldValue;
}

/** One table: its fields and its declared indexes (name -> field list). */
export interface TableSpec {
  fields: Record<string, FieldSpec>;
  indexes: Record<string, string[]>;
}

/** A whole schema: table name -> table. */
export interface SchemaSpec {
  tables: Record<string, TableSpec>;
}

/** Field names every row has; a schema may not declare them. */
export const SYSTEM_FIELDS = ["id", "createdAt"] as const;

/** The index every table has, ordered by `createdAt` then `id`. */
export const CREATION_INDEX = "by_creation";
