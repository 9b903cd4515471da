import { PlatformError, type TableSpec } from "../values/index.js";
import type { AnyField } from "./fields.js";

/** Field name -> field, as written in `table({ ... })`. */
export type FieldMap = Record<string, AnyField>;

/** Index name -> field names, accumulated by `.index()` calls. */
export type IndexMap = Record<string, readonly string[]>;

/** The indexes of a table with no `.index()` calls yet. */
export type NoIndexes = Record<never, readonly string[]>;

/**
 * A table definition: its fields, and its indexes collected by chained `.index()` calls. The type
 * parameters carry the exact field and index names, so `withIndex("by_ownr")` does not compile.
 */
export class TableDefinition<Fields extends FieldMap = FieldMap, Indexes extends IndexMap = NoIndexes> {
  readonly fields: Fields;
  readonly indexes: Record<string, string[]>;
  declare readonly __indexes: Indexes;

  constructor(fields: Fields, indexes: Record<string, string[]> = {}) {
    this.fields = fields;
    this.indexes = indexes;
  }

  /**
   * Declares an index over one or more fields, queried with `withIndex(name, q => ...)`. Every index
   * is implicitly suffixed by `createdAt` then `id`, so its order is total.
   */
  index<
    Name extends string,
    const IndexFields extends readonly [keyof Fields & string, ...(keyof Fields & string)[]],
  >(name: Name, fields: IndexFields): TableDefinition<Fields, Indexes & Record<Name, IndexFields>> {
    if (Object.hasOwn(this.indexes, name)) {
      throw new PlatformError("bad_request", `Index ${name} is declared twice.`);
    }
    return new TableDefinition(this.fields, { ...this.indexes, [name]: [...fields] });
  }

  /** The JSON form stored by the host. */
  toSpec(): TableSpec {
    const fields: TableSpec["fields"] = {};
    for (const [name, value] of Object.entries(this.fields)) fields[name] = value.spec;
    return { fields, indexes: this.indexes };
  }
}

/**
 * Defines a table from a map of field names to field types (`string()`, `number()`, ...).
 *
 * @example
 * const todos = table({ text: string(), done: boolean().default(false) }).index("by_done", ["done"]);
 */
export function table<const Fields extends FieldMap>(fields: Fields): TableDefinition<Fields, NoIndexes> {
  return new TableDefinition(fields);
}
