/**
 * The JSON shapes of the dashboard's data routes (`/v1/deploys/<id>/tables...`, docs/http-api.md
 * "Data browser"): the host answers them and the dashboard's browser bundle reads them, so both
 * sides compile against these types. Plain JSON, no classes.
 */
import type { FieldKind, FieldValue } from "../values/index.js";
import type { RangeOp } from "./query.js";

/** One declared field of a table, as the data browser shows it. */
export interface FieldInfo {
  name: string;
  kind: FieldKind;
  /** For `id("<table>")`: the table its ids name. */
  table?: string;
  optional: boolean;
  default?: FieldValue;
}

/** One index a handler (and the data browser) can query: `by_creation` and the declared ones. */
export interface IndexInfo {
  name: string;
  fields: string[];
  /** Whether `count()` over equalities on its leading fields reads a stored count. */
  counted: boolean;
}

/** A count as the data browser shows it: exact, or a lower bound when counting would walk too far. */
export type RowCount = { exact: number } | { atLeast: number };

/** One table of a deployment, with its exact size when a stored count knows it. */
export interface TableInfo {
  name: string;
  fields: FieldInfo[];
  indexes: IndexInfo[];
  rows: RowCount;
}

/** `GET /v1/deploys/<id>/tables`. */
export interface TablesAnswer {
  deployment: string;
  /** `v1`, or `legacy` (database API v0): a legacy deployment is browsed by id, read-only. */
  apiVersion: "v1" | "legacy";
  /** Whether the caller may insert, edit and delete rows (the owner; the operator on unclaimed ones). */
  writable: boolean;
  tables: TableInfo[];
}

/** What `GET /v1/deploys/<id>/tables/<table>/rows` was asked: one index range, one order. */
export interface RowsQuery {
  index: string;
  order: "asc" | "desc";
  range: RangeOp[];
  numItems: number;
  cursor: string | null;
}

/** One page of rows, newest first or in index order; `count` comes with the first page only. */
export interface RowsAnswer {
  page: Array<Record<string, FieldValue>>;
  isDone: boolean;
  continueCursor: string;
  count?: RowCount;
}

/** A deployment in the dashboard's list: the operator API's view plus its totals. */
export interface DeploymentTotals {
  /** Rows over every table (null: a legacy deployment keeps no counts). */
  rows: number | null;
  objects: number;
  bytes: number;
}
