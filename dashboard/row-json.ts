/**
 * The row panel's logic, apart from React so that it can be tested plainly: which loaded row the
 * panel may show, the editor's JSON of a row, and the patch an edit sends. A field may be named
 * like a member of `Object.prototype` (`constructor`, `toString`, `valueOf`), so every lookup by
 * field name reads own properties only.
 */
import type { TableInfo } from "../sdk/protocol/dashboard.js";
import type { FieldValue } from "../sdk/values/schema-spec.js";

/** A row as the operator API returns it. */
export type Row = Record<string, FieldValue>;

/**
 * The value of `name` in `record` if the record has it itself: a row without an optional field
 * named `constructor` has no value for it, not `Object`'s function.
 */
export function ownValue<T>(record: Record<string, T>, name: string): T | undefined {
  return Object.hasOwn(record, name) ? record[name] : undefined;
}

/**
 * The row the panel of `selected` may show: `loaded` only if it is that row. A load keeps its last
 * answer while the next one comes (so a saved row stays in view while it is read again), and that
 * answer may be another row's: shown under the new selection, its Edit would fill the editor with
 * the other row's fields and Save would write them to the selected row.
 */
export function rowOfSelection(selected: string | null, loaded: Row | undefined): Row | undefined {
  return selected !== null && loaded !== undefined && String(loaded.id) === selected ? loaded : undefined;
}

/** The row's own fields (not `id` and `createdAt`, which the database sets), as editable JSON. */
export function editableJson(table: TableInfo, row: Row | undefined): string {
  const out: Record<string, unknown> = Object.create(null);
  for (const field of table.fields) {
    if (row) {
      const value = ownValue(row, field.name);
      if (value !== undefined) out[field.name] = value;
    } else if (field.default !== undefined) out[field.name] = field.default;
    else if (!field.optional)
      out[field.name] = field.kind === "number" ? 0 : field.kind === "boolean" ? false : "";
  }
  return JSON.stringify(out, null, 2);
}

/** `text` parsed as a JSON object, or a message saying what is wrong. */
export function parseObject(text: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `Not valid JSON: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return "The row must be a JSON object.";
  return value as Record<string, unknown>;
}

/**
 * An update's patch: what changed, and `null` for each field the editor removed (clears it). The
 * patch has no prototype, so a `__proto__` key typed in the editor is sent, not swallowed.
 */
export function patchOf(
  before: Row,
  after: Record<string, unknown>,
  table: TableInfo,
): Record<string, unknown> {
  const patch: Record<string, unknown> = Object.create(null);
  for (const field of table.fields) {
    const name = field.name;
    const was = ownValue(before, name);
    if (!Object.hasOwn(after, name)) {
      if (was !== undefined) patch[name] = null;
    } else if (JSON.stringify(after[name]) !== JSON.stringify(was)) patch[name] = after[name];
  }
  for (const name of Object.keys(after))
    if (!table.fields.some((f) => f.name === name)) patch[name] = after[name];
  return patch;
}
