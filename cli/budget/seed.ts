import type { FieldSpec, FieldValue, SchemaSpec } from "../../sdk/values/index.js";

/** The user ids generated `userId()` values cycle through; the harness's caller is the first. */
export const SEED_USERS = Array.from({ length: 10 }, (_, i) => `user:budget-${i}`);

/**
 * The order to fill tables in: a table's `id()` targets first. A cycle of required `id()` fields
 * cannot be generated (the capsule then needs a seed mutation).
 */
export function seedOrder(schema: SchemaSpec): string[] {
  const order: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (table: string, path: string[]) => {
    if (state.get(table) === "done") return;
    if (state.get(table) === "visiting") {
      throw new Error(
        `Cannot generate rows: required id() fields form a cycle (${[...path, table].join(" -> ")}). Give budget.json a "seed" mutation.`,
      );
    }
    state.set(table, "visiting");
    for (const field of Object.values(schema.tables[table]?.fields ?? {})) {
      if (field.kind === "id" && field.table && field.table !== table && !field.optional)
        visit(field.table, [...path, table]);
    }
    state.set(table, "done");
    order.push(table);
  };
  for (const table of Object.keys(schema.tables)) visit(table, []);
  return order;
}

/**
 * The value of field `name` in the `i`-th generated row: a hint from budget.json when there is
 * one (fixed, cycled, or null for absent), else by kind: strings and numbers distinct per row,
 * booleans alternating, `userId()` cycling over {@link SEED_USERS}, `id()` spread over the rows of
 * its table. Undefined leaves the field absent.
 */
export function generateValue(
  table: string,
  name: string,
  field: FieldSpec,
  i: number,
  hint: FieldValue | FieldValue[] | null | undefined,
  idsOf: (table: string) => string[],
): FieldValue | undefined {
  if (hint === null) return undefined;
  if (Array.isArray(hint)) return hint[i % hint.length];
  if (hint !== undefined) return hint;
  switch (field.kind) {
    case "string":
      return `${name} ${i}`;
    case "number":
      return i;
    case "boolean":
      return i % 2 === 0;
    case "userId":
      return SEED_USERS[i % SEED_USERS.length];
    case "id": {
      const ids = idsOf(field.table ?? table);
      if (ids.length === 0) {
        if (field.optional) return undefined;
        throw new Error(`Cannot generate ${table}.${name}: table ${field.table} has no rows to point at.`);
      }
      return ids[(i * 7919) % ids.length];
    }
  }
}
