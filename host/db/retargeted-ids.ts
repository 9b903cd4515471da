/**
 * A deploy that turns a field into `id("t")` (from another kind, or from ids of another table)
 * checks that every value stored in it names a row of `t`, as a write of such a field does: else
 * `t.get(value)` would answer null for values the schema now calls ids of `t`.
 */
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError, type TableSpec } from "../../sdk/values/index.js";
import { rowKeyUnder, rowPrefix } from "./keys.js";
import { hasKeyUnder, type KvSnapshot } from "./kv/index.js";
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

/** Existence checks in flight at once, each a key-only read of one key (keys are prefix-free). */
const CHECKS_AT_ONCE = 64;

/** Counts the references one deploy checks, refusing past {@link LIMITS.referencesCheckedPerDeploy}. */
export class DeployReferenceChecks {
  private checked = 0;

  /** Counts `n` more, or throws the deploy's refusal (`bad_request`, saying what to do). */
  count(n: number, table: string, fields: readonly RetargetedField[]): void {
    this.checked += n;
    if (this.checked <= LIMITS.referencesCheckedPerDeploy) return;
    const names = fields.map(({ field, target }) => `${table}.${field} (id("${target}"))`).join(", ");
    throw new PlatformError(
      "bad_request",
      `This deploy turns ${names} into id() fields, and each value they hold must be checked: more than ${LIMITS.referencesCheckedPerDeploy} values. Add a new optional id() field instead and fill it from the old one with mutations, or turn fewer fields at a time.`,
    );
  }
}

/**
 * Why one of `rows` holds, in a field of `fields`, a value naming no row of its target at
 * `snapshot`, in words that say what to do; undefined when every value names a row. The rows'
 * values were checked for an id's shape already. Each distinct value of the batch is read once,
 * by key only, {@link CHECKS_AT_ONCE} at a time, and counted by `checks`.
 */
export async function missingTargetProblem(
  snapshot: KvSnapshot,
  deployment: string,
  table: string,
  fields: readonly RetargetedField[],
  rows: readonly StoredRow[],
  checks: DeployReferenceChecks,
): Promise<string | undefined> {
  const prefixes = new Map(fields.map(({ target }) => [target, rowPrefix(deployment, target)]));
  // Each distinct key, with the first row and field that names it.
  const named = new Map<string, { key: Buffer; row: StoredRow; field: RetargetedField }>();
  for (const row of rows) {
    for (const field of fields) {
      const value = row[field.field];
      if (typeof value !== "string") continue;
      const key = rowKeyUnder(prefixes.get(field.target) as Buffer, value);
      const name = key.toString("latin1");
      if (!named.has(name)) named.set(name, { key, row, field });
    }
  }
  checks.count(named.size, table, fields);
  const pending = [...named.values()];
  for (let at = 0; at < pending.length; at += CHECKS_AT_ONCE) {
    const chunk = pending.slice(at, at + CHECKS_AT_ONCE);
    const found = await Promise.all(chunk.map(({ key }) => hasKeyUnder(snapshot, key)));
    const missing = found.indexOf(false);
    if (missing < 0) continue;
    const { row, field } = chunk[missing] as (typeof chunk)[number];
    return `Cannot make ${table}.${field.field} an id("${field.target}") field: row ${row.id} holds ${JSON.stringify(row[field.field])}, which names no row of ${field.target}. Point such rows at rows of ${field.target}, or clear the field in them (make it optional first), then deploy again.`;
  }
  return undefined;
}
