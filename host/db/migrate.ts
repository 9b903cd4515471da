import { createHash, randomBytes } from "node:crypto";
import {
  checkSchemaSpec,
  type FieldSpec,
  PlatformError,
  type SchemaSpec,
  scalarProblem,
  type TableSpec,
} from "../../sdk/values/index.js";
import { afterPrefix } from "./codec.js";
import { countKeyOf, indexPrefix, rowPrefix } from "./keys.js";
import { hasKeyUnder, type KvSnapshot } from "./kv/index.js";
import { DeployReferenceChecks, missingTargetProblem, retargetedIdFields } from "./retargeted-ids.js";
import { parseStoredRow, type StoredRow } from "./rows.js";
import {
  indexSignature,
  type StoredIndex,
  type StoredSchema,
  type StoredTable,
  wantedIndexes,
} from "./stored-schema.js";
import { TurnTaker } from "./turn-taker.js";

/** Progress of an index backfill, for progress bars. */
export interface MigrationProgress {
  table: string;
  index: string;
  done: number;
}

/** What a migration did. */
export interface MigrationReport {
  built: Array<{ table: string; index: string; entries: number }>;
  dropped: Array<{ table: string; index: string }>;
  checkedRows: number;
}

/** A planned migration: the schema to store and the index work to do. */
export interface MigrationPlan {
  next: StoredSchema;
  build: Array<{ table: string; index: string; stored: StoredIndex }>;
  drop: Array<{ table: string; index: string; stored: StoredIndex }>;
  checkedRows: number;
}

function deployError(message: string): PlatformError {
  return new PlatformError("bad_request", message);
}

/** A canonical hash of a schema, bound into pagination cursors. */
export function schemaHash(spec: SchemaSpec): string {
  return createHash("sha256").update(JSON.stringify(spec)).digest("base64url").slice(0, 22);
}

/** What a deploy whose new field types stored rows do not fit can do. */
const DEPLOY_ADVICE =
  " Keep the field's type, or first change or delete the rows that do not fit (a mutation), then deploy again.";

/**
 * Why `row` does not satisfy `spec`, in the documented words, or undefined when it does; a deploy
 * (`deploying`) is also told what to do about a row that does not fit a field's type.
 */
export function storedRowProblem(
  table: string,
  spec: TableSpec,
  row: StoredRow,
  deploying = false,
): string | undefined {
  const advice = deploying ? DEPLOY_ADVICE : "";
  for (const [name, field] of Object.entries(spec.fields)) {
    const value = row[name] ?? field.default;
    if (value === undefined) {
      if (!field.optional) return `Missing value for ${table}.${name}`;
      continue;
    }
    const problem = scalarProblem(field.kind, value, field.table);
    if (problem) return `Existing row ${row.id} does not fit ${table}.${name}: ${problem}.${advice}`;
  }
  for (const name of Object.keys(row)) {
    if (name !== "id" && name !== "createdAt" && !Object.hasOwn(spec.fields, name)) {
      return `Cannot remove field ${table}.${name}: row ${row.id} still has a value. Make it optional and clear it first.`;
    }
  }
  return undefined;
}

async function* rowsOf(snapshot: KvSnapshot, prefix: Buffer): AsyncGenerator<string[]> {
  const iterator = snapshot.iterate({ gte: prefix, lt: afterPrefix(prefix) });
  try {
    for (;;) {
      const batch = await iterator.next(1000);
      if (batch.length === 0) return;
      yield batch.map(([, value]) => value);
    }
  } finally {
    await iterator.close();
  }
}

/** For a hidden user index over a field that was not `userId()` before: now (else undefined). */
function convertedToUserId(
  before: TableSpec | undefined,
  after: TableSpec,
  index: string,
): number | undefined {
  if (!index.startsWith("$user:")) return undefined;
  const field = index.slice("$user:".length);
  const previous = before?.fields[field];
  return previous && previous.kind !== "userId" && after.fields[field]?.kind === "userId"
    ? Date.now()
    : undefined;
}

function fieldsChanged(before: TableSpec | undefined, after: TableSpec): boolean {
  if (!before) return true;
  return JSON.stringify(before.fields) !== JSON.stringify(after.fields);
}

/**
 * The fields of `after` whose default rows may lack and read: added with a default while rows
 * existed, or given one then. `filled`: late fields every row now holds a value of.
 */
function lateDefaults(
  before: StoredTable | undefined,
  after: TableSpec,
  rowsExist: boolean,
  filled: ReadonlySet<string>,
): string[] {
  if (!rowsExist) return [];
  const out: string[] = [];
  for (const [name, field] of Object.entries(after.fields)) {
    if (field.default === undefined) continue;
    const old: FieldSpec | undefined = before?.spec.fields[name];
    const someRowsLackIt =
      !old ||
      (before?.lateDefaults.includes(name) && !filled.has(name)) ||
      (old.optional && old.default === undefined);
    if (someRowsLackIt) out.push(name);
  }
  return out;
}

/**
 * The late-default fields of `before` (see {@link lateDefaults}) whose default `after` changes or
 * removes: the rows stored before the default came hold no value and read it, so a change would
 * change what they hold (and leave their index entries behind). Each row is checked for them.
 */
function lateDefaultsChanged(before: StoredTable | undefined, after: TableSpec): Map<string, unknown> {
  const changed = new Map<string, unknown>();
  for (const name of before?.lateDefaults ?? []) {
    const field = after.fields[name];
    const old = before?.spec.fields[name]?.default;
    if (field && JSON.stringify(field.default) !== JSON.stringify(old)) changed.set(name, old);
  }
  return changed;
}

/** Why `row` forbids changing the late defaults `changed` (field to old default), or undefined. */
function lateDefaultProblem(
  table: string,
  changed: Map<string, unknown>,
  row: StoredRow,
): string | undefined {
  for (const [name, old] of changed) {
    if (row[name] !== undefined) continue;
    return `Cannot change or remove the default of ${table}.${name}: row ${row.id} was stored before the default ${JSON.stringify(old)} was added, holds no value and reads it. Keep the default, or first write the value into such rows (update them with ${name} set), then deploy again.`;
  }
  return undefined;
}

/**
 * Diffs `spec` against the stored schema and checks every documented rule against the stored rows:
 * a required field without default on a table with rows fails with `Missing value for <t>.<f>`;
 * optional and defaulted fields are added without rewriting rows; changed or new indexes are
 * planned for backfill under fresh storage ids; dropped ones for deletion. Writes nothing.
 */
export async function planMigration(
  snapshot: KvSnapshot,
  deployment: string,
  current: StoredSchema,
  input: unknown,
  options: { legacy?: boolean } = {},
): Promise<MigrationPlan> {
  const spec = checkSchemaSpec(input);
  const plan: MigrationPlan = {
    next: { hash: schemaHash(spec), tables: {}, ...(options.legacy ? { legacy: true } : {}) },
    build: [],
    drop: [],
    checkedRows: 0,
  };
  const referenceChecks = new DeployReferenceChecks();
  for (const [name, table] of Object.entries(current.tables)) {
    if (Object.hasOwn(spec.tables, name)) continue;
    if (await hasKeyUnder(snapshot, rowPrefix(deployment, name))) {
      throw deployError(
        `Table ${name} still has rows; delete them before removing the table from the schema.`,
      );
    }
    for (const [index, stored] of Object.entries(table.indexes))
      plan.drop.push({ table: name, index, stored });
  }
  for (const [name, table] of Object.entries(spec.tables)) {
    const before = current.tables[name];
    const prefix = rowPrefix(deployment, name);
    const rowsExist = await hasKeyUnder(snapshot, prefix);
    const lateChanged = lateDefaultsChanged(before, table);
    if (rowsExist && fieldsChanged(before?.spec, table)) {
      const retargeted = retargetedIdFields(before?.spec, table);
      const turns = new TurnTaker();
      for await (const batch of rowsOf(snapshot, prefix)) {
        const rows: StoredRow[] = [];
        for (const json of batch) {
          if (turns.due()) await turns.take();
          const row = parseStoredRow(json);
          const problem =
            lateDefaultProblem(name, lateChanged, row) ?? storedRowProblem(name, table, row, true);
          if (problem) throw deployError(problem);
          if (retargeted.length > 0) rows.push(row);
          plan.checkedRows++;
        }
        const missing =
          rows.length > 0 &&
          (await missingTargetProblem(snapshot, deployment, name, retargeted, rows, referenceChecks));
        if (missing) throw deployError(missing);
      }
    }
    const indexes: Record<string, StoredIndex> = {};
    // Legacy tables keep no index entries: the snapshot runtime reads whole tables.
    for (const [index, fields] of Object.entries(options.legacy ? {} : wantedIndexes(table))) {
      const signature = indexSignature(table, fields);
      const old = before?.indexes[index];
      // An index built before counts existed is rebuilt once, with them.
      if (old && old.signature === signature && old.counted) {
        indexes[index] = old;
      } else {
        const stored: StoredIndex = {
          fields,
          storageId: randomBytes(6).toString("base64url"),
          signature,
          counted: true,
        };
        const notBefore =
          old?.notBefore ?? (rowsExist ? convertedToUserId(before?.spec, table, index) : undefined);
        if (notBefore !== undefined) stored.notBefore = notBefore;
        indexes[index] = stored;
        plan.build.push({ table: name, index, stored });
      }
    }
    for (const [index, stored] of Object.entries(before?.indexes ?? {})) {
      if (indexes[index] !== stored) plan.drop.push({ table: name, index, stored });
    }
    plan.next.tables[name] = {
      spec: table,
      indexes,
      lateDefaults: lateDefaults(before, table, rowsExist, new Set(lateChanged.keys())),
    };
  }
  return plan;
}

/** The key ranges of one stored index: its entries, and its counts. */
export function storedIndexRanges(
  deployment: string,
  table: string,
  stored: StoredIndex,
): Array<{ gte: Buffer; lt: Buffer }> {
  const prefix = indexPrefix(deployment, table, stored.storageId);
  const counts = countKeyOf(prefix);
  return [
    { gte: prefix, lt: afterPrefix(prefix) },
    { gte: counts, lt: afterPrefix(counts) },
  ];
}

/** Streams every stored row of a table from a snapshot, in batches. */
export { rowsOf };
