/**
 * A deploy that turns a field into `id("t")` (from another kind, or from ids of another table)
 * checks that every value stored in it names a row of `t`, as a write of such a field does: else
 * `t.get(value)` would answer null for values the schema now calls ids of `t`.
 */
import type { TableSpec } from "../../sdk/values/index.js";
import { NOT_READY } from "./fast-path.js";
import { rowKeyUnder, rowPrefix } from "./keys.js";
import type { KvSnapshot } from "./kv/index.js";
import type { StoredRow } from "./rows.js";

/** A field that becomes `id(target)`. */
export interface RetargetedField {
  field: string;
  target: string;
}

/** The fields of `after` that are `id(t)` where `before` held another kind or another table. */
export function retargetedIdFields(before: TableSpec | undefined, after: TableSpec): RetargetedField[] {
  const out: RetargetedField[] = [];
  for (const [field, spec] of Object.entries(after.fields)) {
    if (spec.kind !== "id" || spec.table === undefined) continue;
    const old = before?.fields[field];
    if (old?.kind !== "id" || old.table !== spec.table) out.push({ field, target: spec.table });
  }
  return out;
}

/**
 * Why one of `rows` holds, in a field of `fields`, a value naming no row of its target at
 * `snapshot`, in words that say what to do; undefined when every value names a row. The rows'
 * values were checked for an id's shape already. Reads go out together, one batch of rows at a time.
 */
export async function missingTargetProblem(
  snapshot: KvSnapshot,
  deployment: string,
  table: string,
  fields: readonly RetargetedField[],
  rows: readonly StoredRow[],
): Promise<string | undefined> {
  const prefixes = new Map(fields.map(({ target }) => [target, rowPrefix(deployment, target)]));
  const checks: Array<{ row: StoredRow; field: RetargetedField; found: Promise<boolean> | boolean }> = [];
  for (const row of rows) {
    for (const field of fields) {
      const value = row[field.field];
      if (typeof value !== "string") continue;
      const key = rowKeyUnder(prefixes.get(field.target) as Buffer, value);
      const now = snapshot.tryGetSync(key);
      const found =
        now === NOT_READY ? snapshot.get(key).then((stored) => stored !== undefined) : now !== undefined;
      checks.push({ row, field, found });
    }
  }
  const answers = await Promise.all(checks.map((check) => check.found));
  const missing = answers.indexOf(false);
  if (missing < 0) return undefined;
  const { row, field } = checks[missing] as (typeof checks)[number];
  return `Cannot make ${table}.${field.field} an id("${field.target}") field: row ${row.id} holds ${JSON.stringify(row[field.field])}, which names no row of ${field.target}. Point such rows at rows of ${field.target}, or clear the field in them (make it optional first), then deploy again.`;
}
