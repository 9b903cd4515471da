import type { PaginationOptions, PaginationResult } from "../protocol/index.js";
import type { Field, Id } from "./fields.js";
import type { FieldMap, IndexMap, TableDefinition } from "./table.js";

/** A schema as written by authors: table name -> table definition. */
// biome-ignore lint/suspicious/noExplicitAny: any table, whatever its fields and indexes.
export type SchemaDefinition = Record<string, TableDefinition<any, any>>;

type FieldRow<F> = F extends Field<infer T, boolean, boolean> ? T : never;
type IsReadOptional<F> =
  F extends Field<infer _T, infer O, infer D>
    ? O extends true
      ? D extends true
        ? false
        : true
      : false
    : never;
type IsInsertOptional<F> =
  F extends Field<infer _T, infer O, infer D>
    ? O extends true
      ? true
      : D extends true
        ? true
        : false
    : never;
type IsClearable<F> = F extends Field<infer _T, infer O, boolean> ? O : never;

type Simplify<T> = { [K in keyof T]: T[K] };

/** The fields of a row as read: optional fields without a default may be absent. */
export type FieldsOf<Fs extends FieldMap> = Simplify<
  { -readonly [K in keyof Fs as IsReadOptional<Fs[K]> extends true ? never : K]: FieldRow<Fs[K]> } & {
    -readonly [K in keyof Fs as IsReadOptional<Fs[K]> extends true ? K : never]?: FieldRow<Fs[K]>;
  }
>;

/** A stored row as handlers see it: its fields plus `id` and `createdAt` (Unix epoch ms). */
export type Doc<S extends SchemaDefinition, T extends keyof S & string> = Simplify<
  { id: Id<T>; createdAt: number } & FieldsOf<S[T]["fields"]>
>;

/** What `insert()` takes: required fields, plus optional ones (`null` meaning no value). */
export type InsertRow<Fs extends FieldMap> = Simplify<
  { -readonly [K in keyof Fs as IsInsertOptional<Fs[K]> extends true ? never : K]: FieldRow<Fs[K]> } & {
    -readonly [K in keyof Fs as IsInsertOptional<Fs[K]> extends true ? K : never]?: FieldRow<Fs[K]> | null;
  }
>;

/** What `update()` takes: any subset of fields; `null` clears an optional field (restoring its default). */
export type Patch<Fs extends FieldMap> = Simplify<{
  -readonly [K in keyof Fs]?: IsClearable<Fs[K]> extends true ? FieldRow<Fs[K]> | null : FieldRow<Fs[K]>;
}>;

type IndexesOf<S extends SchemaDefinition, T extends keyof S> =
  S[T] extends TableDefinition<FieldMap, infer I> ? I : never;

/** The fields an index can be ranged on, in order: its declared fields, then `createdAt`. */
export type IndexFields<
  S extends SchemaDefinition,
  T extends keyof S,
  I extends string,
> = I extends "by_creation"
  ? ["createdAt"]
  : IndexesOf<S, T> extends IndexMap
    ? [...IndexesOf<S, T>[I], "createdAt"]
    : never;

/** Names usable with `withIndex` on table `T`. */
export type IndexName<S extends SchemaDefinition, T extends keyof S> =
  | (keyof IndexesOf<S, T> & string)
  | "by_creation";

type EqValue<D, F extends keyof D> = undefined extends D[F] ? Exclude<D[F], undefined> | null : D[F];
type RangeValue<D, F extends keyof D> = Exclude<D[F], undefined>;
type Head<L> = L extends readonly [infer H, ...unknown[]] ? H : never;
type Tail<L> = L extends readonly [unknown, ...infer R] ? R : [];

/** The end of a range expression; only the database reads it. */
export interface IndexRangeEnd {
  readonly __range: true;
}

/** After a lower bound: an upper bound on the same field may follow. */
export interface IndexRangeUpper<D, F extends keyof D> extends IndexRangeEnd {
  lt(field: F, value: RangeValue<D, F>): IndexRangeEnd;
  lte(field: F, value: RangeValue<D, F>): IndexRangeEnd;
}

/**
 * Builds an index range: equalities on a prefix of the index fields, in order, then at most one
 * lower and one upper bound on the next field. Field order is checked by the type system.
 */
export interface IndexRangeBuilder<D, Fs extends readonly unknown[]> extends IndexRangeEnd {
  eq<F extends Head<Fs> & keyof D>(field: F, value: EqValue<D, F>): IndexRangeBuilder<D, Tail<Fs>>;
  gt<F extends Head<Fs> & keyof D>(field: F, value: RangeValue<D, F>): IndexRangeUpper<D, F>;
  gte<F extends Head<Fs> & keyof D>(field: F, value: RangeValue<D, F>): IndexRangeUpper<D, F>;
  lt<F extends Head<Fs> & keyof D>(field: F, value: RangeValue<D, F>): IndexRangeEnd;
  lte<F extends Head<Fs> & keyof D>(field: F, value: RangeValue<D, F>): IndexRangeEnd;
}

export type { PaginationOptions, PaginationResult };

/** An ordered index query; terminal methods run it under the handler's read budgets. */
export interface Query<Row> {
  /** Ascending (default) or descending index order; `first()` on `desc` gives the latest row. */
  order(order: "asc" | "desc"): Query<Row>;
  /** Every match; more than 1000 is an error (use `paginate()`). */
  collect(): Promise<Row[]>;
  /** At most `n` matches. */
  take(n: number): Promise<Row[]>;
  /** The first match or `null`. */
  first(): Promise<Row | null>;
  /** Number of matching index entries, without loading rows; each counts as one row read. */
  count(): Promise<number>;
  /** One page of matches and a cursor to continue from. */
  paginate(options: PaginationOptions): Promise<PaginationResult<Row>>;
}

/** `ctx.db.<table>` in a query: reads only. Terminal methods without `withIndex` use `by_creation`. */
export interface TableReader<S extends SchemaDefinition, T extends keyof S & string>
  extends Query<Doc<S, T>> {
  /** The row with this id, or `null`. */
  get(id: Id<T>): Promise<Doc<S, T> | null>;
  /** Queries an index, optionally restricted to a range. */
  withIndex<I extends IndexName<S, T>>(
    index: I,
    range?: (q: IndexRangeBuilder<Doc<S, T>, IndexFields<S, T, I>>) => IndexRangeEnd,
  ): Query<Doc<S, T>>;
}

/** `ctx.db.<table>` in a mutation: reads and writes. */
export interface TableWriter<S extends SchemaDefinition, T extends keyof S & string>
  extends TableReader<S, T> {
  /** Inserts a row (defaults applied) and returns its new id. */
  insert(row: InsertRow<S[T]["fields"]>): Promise<Id<T>>;
  /** Changes some fields of a row; `null` clears an optional field. */
  update(id: Id<T>, patch: Patch<S[T]["fields"]>): Promise<void>;
  /** Deletes a row. Check ownership first: the database does not. */
  delete(id: Id<T>): Promise<void>;
}

/** `ctx.db` in queries. */
export type DatabaseReader<S extends SchemaDefinition> = {
  readonly [T in keyof S & string]: TableReader<S, T>;
};

/** `ctx.db` in mutations. */
export type DatabaseWriter<S extends SchemaDefinition> = {
  readonly [T in keyof S & string]: TableWriter<S, T>;
};
