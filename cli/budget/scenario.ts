import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { FieldValue } from "../../sdk/values/index.js";

/** Who the harness calls handlers as. */
export type BudgetCaller = "account" | "guest" | "anonymous";

/**
 * `budget.json` in a capsule folder (documented in docs/capsules.md): the sizes to try, who calls,
 * how rows are made, and the arguments of each handler (which otherwise come from its declared
 * argument type, see infer-args.ts). Every part is optional.
 *
 * ```json
 * {
 *   "sizes": [100, 1000, 10000],
 *   "caller": "account",
 *   "seed": "seedRows",
 *   "rows": { "todos": { "done": [true, false], "note": null } },
 *   "calls": { "byList": { "args": { "list": "$id:lists" } }, "wipe": { "skip": true } }
 * }
 * ```
 * Argument placeholders: `"$size"` (rows per table now), `"$id:<table>"` (an id of a row of that
 * table), `"$user"` (the caller's user id), `"$now"` (ms since the epoch).
 */
export interface BudgetScenario {
  sizes: number[];
  caller: BudgetCaller;
  /** A mutation that adds `{ count }` rows to each table it seeds (at most 500 per call). */
  seed?: string;
  /** Per table and field: a fixed value, values to cycle through, or null (leave it absent). */
  rows: Record<string, Record<string, FieldValue | FieldValue[] | null>>;
  calls: Record<string, { args?: unknown; skip?: boolean }>;
}

/** The default sizes: rows per table. */
export const DEFAULT_SIZES = [100, 1000, 10_000];
/** Largest size the harness accepts (rows per table). */
export const MAX_SIZE = 1_000_000;

function fail(file: string, what: string): never {
  throw new Error(`${file}: ${what}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Checks a list of sizes: ascending positive integers up to {@link MAX_SIZE}. */
export function checkSizes(sizes: unknown, where: string): number[] {
  if (
    !Array.isArray(sizes) ||
    sizes.length === 0 ||
    !sizes.every((n) => Number.isSafeInteger(n) && n >= 1 && n <= MAX_SIZE)
  )
    fail(where, `sizes must be a list of whole numbers from 1 to ${MAX_SIZE}.`);
  for (let i = 1; i < sizes.length; i++)
    if ((sizes[i] as number) <= (sizes[i - 1] as number)) fail(where, "sizes must be in increasing order.");
  return sizes as number[];
}

/** Reads and checks the scenario (`<dir>/budget.json` unless `file` is given; none: defaults). */
export function loadScenario(dir: string, file?: string): { scenario: BudgetScenario; file?: string } {
  const path = file ?? join(dir, "budget.json");
  if (!existsSync(path)) {
    if (file) throw new Error(`No scenario file at ${file}.`);
    return { scenario: { sizes: DEFAULT_SIZES, caller: "account", rows: {}, calls: {} } };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    fail(path, `not valid JSON (${(error as Error).message}).`);
  }
  if (!isObject(raw)) fail(path, "must be a JSON object.");
  const known = new Set(["sizes", "caller", "seed", "rows", "calls"]);
  for (const key of Object.keys(raw))
    if (!known.has(key)) fail(path, `unknown member "${key}" (known: ${[...known].join(", ")}).`);
  const scenario: BudgetScenario = {
    sizes: raw.sizes === undefined ? DEFAULT_SIZES : checkSizes(raw.sizes, path),
    caller: "account",
    rows: {},
    calls: {},
  };
  if (raw.caller !== undefined) {
    if (raw.caller !== "account" && raw.caller !== "guest" && raw.caller !== "anonymous")
      fail(path, 'caller must be "account", "guest" or "anonymous".');
    scenario.caller = raw.caller;
  }
  if (raw.seed !== undefined) {
    if (typeof raw.seed !== "string" || raw.seed === "") fail(path, "seed must be the name of a mutation.");
    scenario.seed = raw.seed;
  }
  if (raw.rows !== undefined) {
    if (!isObject(raw.rows)) fail(path, "rows must map table names to field values.");
    for (const [table, fields] of Object.entries(raw.rows)) {
      if (!isObject(fields)) fail(path, `rows.${table} must map field names to values.`);
      for (const [field, value] of Object.entries(fields)) {
        const values = Array.isArray(value) ? value : [value];
        if (Array.isArray(value) && value.length === 0)
          fail(path, `rows.${table}.${field} is an empty list.`);
        if (!values.every((v) => v === null || ["string", "number", "boolean"].includes(typeof v)))
          fail(path, `rows.${table}.${field} must be a string, number, boolean, null or a list of them.`);
      }
      scenario.rows[table] = fields as BudgetScenario["rows"][string];
    }
  }
  if (raw.calls !== undefined) {
    if (!isObject(raw.calls)) fail(path, "calls must map handler names to { args?, skip? }.");
    for (const [name, call] of Object.entries(raw.calls)) {
      if (!isObject(call)) fail(path, `calls.${name} must be an object { args?, skip? }.`);
      if (call.skip !== undefined && typeof call.skip !== "boolean")
        fail(path, `calls.${name}.skip must be true or false.`);
      scenario.calls[name] = call as { args?: unknown; skip?: boolean };
    }
  }
  return { scenario, file: path };
}

/** Replaces the placeholders of SPEC-free scenario args: `$size`, `$id:<table>`, `$user`, `$now`. */
export function fillArgs(
  value: unknown,
  context: { size: number; user: string | null; now: number; idOf: (table: string) => string | undefined },
): unknown {
  if (typeof value === "string") {
    if (value === "$size") return context.size;
    if (value === "$user") return context.user;
    if (value === "$now") return context.now;
    if (value.startsWith("$id:")) {
      const table = value.slice(4);
      const id = context.idOf(table);
      if (id === undefined) throw new Error(`No row of table ${table} to use for "${value}".`);
      return id;
    }
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => fillArgs(v, context));
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillArgs(v, context)]));
  return value;
}
