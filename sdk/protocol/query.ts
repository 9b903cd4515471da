import type { FieldValue } from "../values/index.js";

/** A comparison in an index range, as built by `q.eq(...).gt(...)` in a handler. */
export interface RangeOp {
  op: "eq" | "gt" | "gte" | "lt" | "lte";
  field: string;
  /** `null` only with `eq`: matches rows where the optional field is absent. */
  value: FieldValue | null;
}

/** A database query as it crosses from the isolate to the host. */
export interface QuerySpec {
  table: string;
  /** Index name; `by_creation` when the handler named none. */
  index: string;
  range: RangeOp[];
  order: "asc" | "desc";
}

/** The terminal operation that runs a {@link QuerySpec}. */
export type QueryTerminal =
  | { kind: "collect" }
  | { kind: "take"; n: number }
  | { kind: "first" }
  | { kind: "count" }
  | { kind: "paginate"; cursor: string | null; numItems: number };

/** What `paginate()` returns (docs/capsules.md "Pagination"). */
export interface PaginationResult<Row> {
  page: Row[];
  isDone: boolean;
  continueCursor: string;
}

/** The pagination argument a paginated query receives. */
export interface PaginationOptions {
  cursor: string | null;
  numItems: number;
}
