/**
 * Checks of a deployment's database as an archive brings it (host/transfer): the archive is
 * untrusted, so its stored schema must be exactly what the capsule's code declares (with index
 * records a migration could have written), and every row must be one the database could hold.
 */
import {
  checkSchemaSpec,
  isRowIdShape,
  PlatformError,
  type SchemaSpec,
  type TableSpec,
} from "../../sdk/values/index.js";
import { containersMoreThan, membersMoreThan } from "../json-shape.js";
import { schemaHash, storedRowProblem } from "./migrate.js";
import { parseStoredRow } from "./rows.js";
import {
  indexSignature,
  type StoredIndex,
  type StoredSchema,
  type StoredTable,
  wantedIndexes,
} from "./stored-schema.js";

const STORAGE_ID = /^[A-Za-z0-9_-]{1,32}$/;

function invalid(message: string): PlatformError {
  return new PlatformError("bad_request", `Invalid archive: ${message}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function checkIndex(
  table: string,
  name: string,
  spec: TableSpec,
  fields: string[],
  value: unknown,
): StoredIndex {
  if (!isObject(value)) throw invalid(`index ${table}.${name} is missing from schema.json.`);
  const { storageId, signature, notBefore, counted } = value;
  if (JSON.stringify(value.fields) !== JSON.stringify(fields) || signature !== indexSignature(spec, fields))
    throw invalid(`index ${table}.${name} in schema.json does not match the code's schema.`);
  if (typeof storageId !== "string" || !STORAGE_ID.test(storageId))
    throw invalid(`index ${table}.${name} has no valid storage id.`);
  if (notBefore !== undefined && (typeof notBefore !== "number" || !Number.isFinite(notBefore)))
    throw invalid(`index ${table}.${name} has an invalid notBefore.`);
  if (counted !== undefined && counted !== true)
    throw invalid(`index ${table}.${name} has an invalid counted flag.`);
  return {
    fields,
    storageId,
    signature,
    ...(notBefore === undefined ? {} : { notBefore }),
    ...(counted ? { counted } : {}),
  };
}

function checkTable(name: string, spec: TableSpec, value: unknown, legacy: boolean): StoredTable {
  if (!isObject(value) || !isObject(value.indexes) || !Array.isArray(value.lateDefaults))
    throw invalid(`table ${name} in schema.json is malformed.`);
  if (JSON.stringify(value.spec) !== JSON.stringify(spec))
    throw invalid(`table ${name} in schema.json does not match the code's schema.`);
  const wanted = legacy ? {} : wantedIndexes(spec);
  const given = Object.keys(value.indexes);
  if (given.length !== Object.keys(wanted).length || given.some((index) => !Object.hasOwn(wanted, index)))
    throw invalid(`the indexes of table ${name} in schema.json do not match the code's schema.`);
  const indexes: Record<string, StoredIndex> = {};
  const storageIds = new Set<string>();
  for (const [index, fields] of Object.entries(wanted)) {
    const stored = checkIndex(name, index, spec, fields, value.indexes[index]);
    if (storageIds.has(stored.storageId)) throw invalid(`two indexes of ${name} share a storage id.`);
    storageIds.add(stored.storageId);
    indexes[index] = stored;
  }
  const lateDefaults: string[] = [];
  for (const field of value.lateDefaults) {
    if (
      typeof field !== "string" ||
      spec.fields[field]?.default === undefined ||
      lateDefaults.includes(field)
    )
      throw invalid(`table ${name} lists ${JSON.stringify(field)} as a late default.`);
    lateDefaults.push(field);
  }
  return { spec, indexes, lateDefaults };
}

/**
 * The stored schema of an archive, checked against `declared` (the schema the archive's code
 * declares): same tables and fields, the indexes a migration keeps for them, a legacy flag that
 * matches the code's database API version.
 */
export function checkImportedSchema(value: unknown, declared: unknown, legacy: boolean): StoredSchema {
  const spec: SchemaSpec = checkSchemaSpec(declared);
  if (!isObject(value) || !isObject(value.tables)) throw invalid("schema.json is malformed.");
  if (value.hash !== schemaHash(spec))
    throw invalid("schema.json does not match the schema the archive's code declares.");
  if ((value.legacy === true) !== legacy)
    throw invalid("schema.json and the archive's code disagree on the database API version.");
  const names = Object.keys(value.tables);
  if (names.length !== Object.keys(spec.tables).length || names.some((t) => !Object.hasOwn(spec.tables, t)))
    throw invalid("the tables of schema.json do not match the code's schema.");
  const tables: Record<string, StoredTable> = {};
  for (const [name, table] of Object.entries(spec.tables))
    tables[name] = checkTable(name, table, value.tables[name], legacy);
  return { hash: value.hash, tables, ...(legacy ? { legacy: true } : {}) };
}

/** True for a `createdAt` as the legacy runtime stored it: an ISO 8601 timestamp string. */
function isLegacyCreatedAt(value: unknown): boolean {
  if (typeof value !== "string") return false;
  const time = Date.parse(value);
  return Number.isFinite(time) && new Date(time).toISOString() === value;
}

/** The most members a row of `spec` has: its fields, id and createdAt (counted once per table). */
function membersOfRow(spec: TableSpec): number {
  let members = rowMembers.get(spec);
  if (members === undefined) {
    members = Object.keys(spec.fields).length + 2;
    rowMembers.set(spec, members);
  }
  return members;
}
const rowMembers = new WeakMap<TableSpec, number>();

/**
 * One row of table `table` from an archive line: its stored JSON (canonical: as the database
 * writes it) and its `createdAt` as a number. Refuses a malformed id or `createdAt`, and any row
 * `spec` does not admit, with the line's number.
 */
export function checkImportedRow(
  table: string,
  spec: TableSpec,
  line: string,
  where: string,
): { json: string; id: string; createdAt: number } {
  // A row is one flat object of scalars: refused before the host's main thread parses anything
  // else (one 128 MiB line of `[{},{},...]` would hold it for minutes).
  if (containersMoreThan(line, 1))
    throw invalid(`${where} is not a row object (it nests objects or arrays).`);
  // Nor more members than the table has fields, with id and createdAt: a row of 2 million members
  // held the main thread 7.4 s before the schema refused it.
  const fields = membersOfRow(spec);
  if (line.length > fields && membersMoreThan(line, fields))
    throw invalid(`${where} has more fields than table ${table} (${fields - 2} and id, createdAt).`);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw invalid(`${where} is not JSON.`);
  }
  if (!isObject(value)) throw invalid(`${where} is not a row object.`);
  if (!isRowIdShape(value.id)) throw invalid(`${where} has no well-formed id.`);
  const createdAt = value.createdAt;
  if (!(typeof createdAt === "number" && Number.isFinite(createdAt)) && !isLegacyCreatedAt(createdAt))
    throw invalid(`${where} (row ${value.id}) has no valid createdAt.`);
  if (Object.values(value).includes(null)) throw invalid(`${where} (row ${value.id}) holds null.`);
  const json = JSON.stringify(value);
  const row = parseStoredRow(json);
  const problem = storedRowProblem(table, spec, row);
  if (problem) throw invalid(`${where}: ${problem}`);
  return { json, id: row.id, createdAt: row.createdAt };
}
