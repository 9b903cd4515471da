import { PlatformError } from "./errors.js";
import {
  CREATION_INDEX,
  type FieldSpec,
  type SchemaSpec,
  SYSTEM_FIELDS,
  type TableSpec,
} from "./schema-spec.js";
import { isValidName, scalarProblem } from "./validate.js";

const FIELD_KINDS = new Set(["string", "boolean", "number", "id", "userId"]);
const MAX_INDEX_FIELDS = 16;
/**
 * Indexes of one table, `by_creation` aside and the hidden one of each `userId()` field counted:
 * every write of a row writes each of them, on the host's main thread, each entry a copy of the row.
 */
const MAX_TABLE_INDEXES = 32;
/**
 * Tables of one schema, and fields of one table. A deploy checks and compiles every one, the
 * dashboard lists them, and on PostgreSQL a mutation's reads ahead try each table: 40,000 tables
 * held the host's main thread 0.6 s a deploy, and 20,000 optional fields 9 ms an insert.
 */
const MAX_TABLES = 1000;
const MAX_TABLE_FIELDS = 1024;
/**
 * `userId()` fields of one schema, all tables together: a guest's upgrade to an account scans each
 * one's index for the guest's rows while it holds the deployment's write lock (500 tables of 31
 * such fields took 28-38 s a sign-in).
 */
const MAX_USER_ID_FIELDS = 256;

function fail(message: string): never {
  throw new PlatformError("bad_request", `Invalid schema: ${message}`);
}

function checkField(table: string, name: string, field: FieldSpec, tables: Set<string>): FieldSpec {
  if (!isValidName(name))
    fail(
      `field name ${JSON.stringify(name)} in table ${table} must be a letter followed by letters, digits or _.`,
    );
  if ((SYSTEM_FIELDS as readonly string[]).includes(name))
    fail(`${table}.${name} is a system field; every row already has it.`);
  if (typeof field !== "object" || field === null || !FIELD_KINDS.has(field.kind))
    fail(`${table}.${name} has an unknown field type.`);
  if (typeof field.optional !== "boolean") fail(`${table}.${name} must say whether it is optional.`);
  if (field.kind === "id") {
    if (typeof field.table !== "string" || !tables.has(field.table)) {
      fail(`${table}.${name} is id(${JSON.stringify(field.table)}), but the schema has no such table.`);
    }
  } else if (field.table !== undefined) {
    fail(`${table}.${name} names a table but is not an id() field.`);
  }
  if (field.default !== undefined) {
    if (field.kind === "id") fail(`${table}.${name}: id() fields cannot have a default.`);
    const problem = scalarProblem(field.kind, field.default);
    if (problem) fail(`default of ${table}.${name}: ${problem}.`);
  }
  // Its known members only, in the builders' order (the schema's hash is of its JSON text).
  const checked: FieldSpec =
    field.kind === "id"
      ? { kind: field.kind, table: field.table as string, optional: field.optional }
      : { kind: field.kind, optional: field.optional };
  if (field.default !== undefined) checked.default = field.default;
  return checked;
}

/**
 * Checks a schema's JSON form completely: names, field types, defaults, index definitions. The
 * builders call it so authors see mistakes early, and the host calls it again on every deploy
 * because a hostile capsule can hand over any JSON it likes. Answers a copy holding only what it
 * checked: members it does not know are dropped, not stored (850,000 of them in a capsule's
 * declaration made every listing of deployments parse them).
 */
export function checkSchemaSpec(spec: unknown): SchemaSpec {
  if (typeof spec !== "object" || spec === null || typeof (spec as SchemaSpec).tables !== "object") {
    fail("expected { tables: { ... } }.");
  }
  const tables = (spec as SchemaSpec).tables;
  const names = new Set(Object.keys(tables));
  if (names.size > MAX_TABLES)
    fail(
      `the schema has ${names.size} tables; at most ${MAX_TABLES} are allowed. Keep related data in one table, told apart by a field.`,
    );
  let userIdFields = 0;
  const checked: SchemaSpec = { tables: {} };
  for (const [tableName, table] of Object.entries(tables)) {
    if (!isValidName(tableName))
      fail(`table name ${JSON.stringify(tableName)} must be a letter followed by letters, digits or _.`);
    if (
      typeof table !== "object" ||
      table === null ||
      typeof table.fields !== "object" ||
      typeof table.indexes !== "object"
    ) {
      fail(`table ${tableName} must have fields and indexes.`);
    }
    const fieldCount = Object.keys(table.fields).length;
    if (fieldCount > MAX_TABLE_FIELDS)
      fail(
        `table ${tableName} has ${fieldCount} fields; at most ${MAX_TABLE_FIELDS} are allowed. Split it into tables that refer to each other with id() fields.`,
      );
    const fields: TableSpec["fields"] = {};
    for (const [fieldName, field] of Object.entries(table.fields))
      fields[fieldName] = checkField(tableName, fieldName, field, names);
    const indexes: TableSpec["indexes"] = {};
    checked.tables[tableName] = { fields, indexes };
    // Each userId() field keeps a hidden index (a copy of the row per entry) as a declared one does.
    const declared = Object.keys(table.indexes).length;
    const hidden = Object.values(table.fields).filter((field) => field.kind === "userId").length;
    userIdFields += hidden;
    if (userIdFields > MAX_USER_ID_FIELDS)
      fail(
        `the schema has more than ${MAX_USER_ID_FIELDS} userId() fields (${tableName} passes it); at most ${MAX_USER_ID_FIELDS} are allowed, all tables together. Signing a guest in searches each of them for the guest's rows: keep user ids in fewer fields.`,
      );
    if (declared + hidden > MAX_TABLE_INDEXES)
      fail(
        `table ${tableName} has ${declared} indexes and ${hidden} userId() fields, each of which keeps an index of its own; at most ${MAX_TABLE_INDEXES} are allowed together. Drop the indexes no query uses, or keep user ids in fewer fields.`,
      );
    for (const [indexName, fields] of Object.entries(table.indexes)) {
      if (!isValidName(indexName))
        fail(
          `index name ${JSON.stringify(indexName)} on ${tableName} must be a letter followed by letters, digits or _.`,
        );
      if (indexName === CREATION_INDEX)
        fail(`${tableName}.${CREATION_INDEX} is built in; choose another index name.`);
      if (!Array.isArray(fields) || fields.length === 0)
        fail(`index ${tableName}.${indexName} needs at least one field.`);
      if (fields.length > MAX_INDEX_FIELDS)
        fail(`index ${tableName}.${indexName} has more than ${MAX_INDEX_FIELDS} fields.`);
      const seen = new Set<string>();
      for (const field of fields) {
        if (typeof field !== "string" || !Object.hasOwn(table.fields, field)) {
          fail(
            `index ${tableName}.${indexName} names ${JSON.stringify(field)}, which is not a field of ${tableName}.`,
          );
        }
        if (seen.has(field)) fail(`index ${tableName}.${indexName} names ${field} twice.`);
        seen.add(field);
      }
      indexes[indexName] = [...fields];
    }
  }
  return checked;
}
