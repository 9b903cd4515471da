/**
 * The data browser's filter as it lives in the page's URL (`index`, `order`, `eq.<field>`,
 * `absent.<field>`, `gt.<field>`/`gte.<field>`, `lt.<field>`/`lte.<field>`, `cursor`) and as the host's query engine
 * takes it: an index range built like `withIndex`, equalities on the index's fields in order, then
 * at most one lower and one upper bound on the next field.
 */

import type { FieldInfo, IndexInfo, TableInfo } from "../sdk/protocol/dashboard.js";
import type { RangeOp } from "../sdk/protocol/query.js";
import type { FieldValue } from "../sdk/values/schema-spec.js";

/** The filter a rows page shows, read from its URL. */
export interface Filter {
  index: string;
  order: "asc" | "desc";
  /**
   * Field -> typed text of an equality, or `null` for "absent": rows without a value for that
   * optional field (the engine's `eq(field, null)`, which index keys order before every value).
   * Read it with {@link eqOf} and change it with {@link withEq}: a field may be named like a member
   * of `Object.prototype` (`constructor`, `toString`), which a plain lookup would find.
   */
  eq: Record<string, string | null>;
  lower?: { op: "gt" | "gte"; text: string };
  upper?: { op: "lt" | "lte"; text: string };
}

/**
 * The equality on `field`: its text, `null` for "absent", undefined for none. Only own entries
 * count, so a field named `constructor` without an equality is not given `Object`'s function.
 */
export function eqOf(filter: Pick<Filter, "eq">, field: string): string | null | undefined {
  return Object.hasOwn(filter.eq, field) ? filter.eq[field] : undefined;
}

/**
 * A copy of `eq` with `field` set to `text` (or removed for undefined). The copy has no prototype,
 * so a field named `__proto__` is stored as an entry instead of replacing the object's prototype.
 */
export function withEq(eq: Filter["eq"], field: string, text: string | null | undefined): Filter["eq"] {
  const next: Filter["eq"] = Object.assign(Object.create(null), eq);
  if (text === undefined) delete next[field];
  else next[field] = text;
  return next;
}

/** The fields a range may compare on `index`: its declared fields, then `createdAt`. */
export function rangeFields(index: IndexInfo | undefined): string[] {
  return [...(index?.fields ?? []), "createdAt"];
}

/** Reads the filter of a rows URL. */
export function readFilter(params: URLSearchParams, table: TableInfo | undefined): Filter {
  const indexName = params.get("index") ?? "by_creation";
  const index = table?.indexes.find((i) => i.name === indexName);
  const filter: Filter = {
    index: indexName,
    order: params.get("order") === "asc" ? "asc" : "desc",
    eq: Object.create(null), // no prototype: see `withEq`
  };
  for (const field of rangeFields(index)) {
    const eq = params.get(`eq.${field}`);
    if (eq !== null) filter.eq[field] = eq;
    else if (params.has(`absent.${field}`)) filter.eq[field] = null;
    for (const op of ["gt", "gte"] as const) {
      const text = params.get(`${op}.${field}`);
      if (text !== null) filter.lower = { op, text };
    }
    for (const op of ["lt", "lte"] as const) {
      const text = params.get(`${op}.${field}`);
      if (text !== null) filter.upper = { op, text };
    }
  }
  return filter;
}

/** The field the bounds apply to: the first of the index's fields without an equality. */
export function boundField(filter: Filter, index: IndexInfo | undefined): string | undefined {
  return rangeFields(index).find((field) => eqOf(filter, field) === undefined);
}

/** The URL parameters of `filter` (page 1: no cursor). */
export function filterParams(filter: Filter, index: IndexInfo | undefined): URLSearchParams {
  const params = new URLSearchParams();
  if (filter.index !== "by_creation") params.set("index", filter.index);
  if (filter.order !== "desc") params.set("order", filter.order);
  for (const field of rangeFields(index)) {
    const text = eqOf(filter, field);
    if (text === null) params.set(`absent.${field}`, "");
    else if (text !== undefined) params.set(`eq.${field}`, text);
  }
  const bound = boundField(filter, index);
  if (bound !== undefined) {
    if (filter.lower?.text) params.set(`${filter.lower.op}.${bound}`, filter.lower.text);
    if (filter.upper?.text) params.set(`${filter.upper.op}.${bound}`, filter.upper.text);
  }
  return params;
}

/** Whether `field` may be absent from a row (an optional field; `createdAt` never is). */
export function mayBeAbsent(table: TableInfo, field: string): boolean {
  return table.fields.some((f) => f.name === field && f.optional);
}

/** The kind a range compares `field` as (`createdAt` is a number of epoch milliseconds). */
function kindOf(table: TableInfo, field: string): FieldInfo["kind"] {
  if (field === "createdAt") return "number";
  return table.fields.find((f) => f.name === field)?.kind ?? "string";
}

/**
 * The typed value of `text` for `field`: numbers (a `createdAt` may also be written as a date),
 * `true`/`false`, strings as typed. Throws a message for people when it cannot be one.
 */
export function parseValue(table: TableInfo, field: string, text: string): FieldValue {
  const kind = kindOf(table, field);
  if (kind === "number") {
    const trimmed = text.trim();
    const n = Number(trimmed);
    if (trimmed !== "" && Number.isFinite(n)) return n;
    if (field === "createdAt" && !Number.isNaN(Date.parse(trimmed))) return Date.parse(trimmed);
    throw new Error(
      `${field} is a number${field === "createdAt" ? " (epoch ms) or a date" : ""}: "${text}" is not one.`,
    );
  }
  if (kind === "boolean") {
    if (text === "true" || text === "false") return text === "true";
    throw new Error(`${field} is true or false, not "${text}".`);
  }
  return text;
}

/** The engine's range for `filter`, its values typed by the table's fields. */
export function rangeOf(filter: Filter, table: TableInfo): RangeOp[] {
  const index = table.indexes.find((i) => i.name === filter.index);
  const ops: RangeOp[] = [];
  const fields = rangeFields(index);
  for (const field of fields) {
    const text = eqOf(filter, field);
    if (text === undefined) break;
    ops.push({ op: "eq", field, value: text === null ? null : parseValue(table, field, text) });
  }
  const skipped = fields.slice(ops.length).find((field) => eqOf(filter, field) !== undefined);
  if (skipped !== undefined)
    throw new Error(
      `${filter.index} compares its fields in order (${fields.join(", ")}): give ${fields[ops.length]} a value before ${skipped}.`,
    );
  const bound = boundField(filter, index);
  if (bound !== undefined && ops.length === rangeFields(index).indexOf(bound)) {
    if (filter.lower)
      ops.push({ op: filter.lower.op, field: bound, value: parseValue(table, bound, filter.lower.text) });
    if (filter.upper)
      ops.push({ op: filter.upper.op, field: bound, value: parseValue(table, bound, filter.upper.text) });
  }
  return ops;
}
