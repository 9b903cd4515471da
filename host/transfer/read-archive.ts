/**
 * Reading and checking an export archive before anything is written: the manifest and settings,
 * the code, every row against the schema (which import.ts checks against the code first), and
 * every object's record and bytes. Any problem refuses the whole archive, naming the file and line.
 */
import { LIMITS } from "../../sdk/protocol/index.js";
import { isRowIdShape, PlatformError } from "../../sdk/values/index.js";
import { checkImportedRow, type DeploymentData, type EarlyEntries, type StoredSchema } from "../db/index.js";
import { containersMoreThan, membersMoreThan } from "../json-shape.js";
import { type ArchivedObject, checkArchivedObject, type ObjectTransfer } from "../storage/index.js";
import {
  ARCHIVE_FORMAT,
  ARCHIVE_VERSION,
  type ArchiveManifest,
  CODE_ENTRY,
  DEPLOYMENT_ENTRY,
  EARLY_ENTRIES_ENTRY,
  MANIFEST_ENTRY,
  OBJECTS_ENTRY,
  objectEntry,
  SCHEMA_ENTRY,
  tableEntry,
} from "./archive-format.js";
import type { ArchiveReader } from "./archive-reader.js";

/** Members one line of `objects.jsonl` may hold: a record is one flat object of a few members. */
const RECORD_SHAPE = 64;

/**
 * Why a row line is bounded by `LIMITS.bytesWritten`: no mutation can store a row's JSON past it
 * (it counts the row once, and once per index entry), so a larger row is no export's. Before, one
 * 100 MiB row of a 108 KB archive was imported, and each read of it held the main thread 0.1 s.
 */
const ROW_LINE_REASON = "LIMITS.bytesWritten: no mutation stores a larger row";

function invalid(message: string): PlatformError {
  return new PlatformError("bad_request", `Invalid archive: ${message}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What an archive says before its rows and objects are read. */
export interface ArchiveHead {
  manifest: ArchiveManifest;
  settings: { restricted: boolean; approved: string[] };
  code: string;
  /** schema.json as found: checked against the code's declaration once the code is loaded. */
  schema: unknown;
}

/** Reads and checks the manifest, deployment.json and code.js. */
export async function readArchiveHead(reader: ArchiveReader): Promise<ArchiveHead> {
  const manifest = await reader.json(MANIFEST_ENTRY, 1024 * 1024);
  if (!isObject(manifest) || manifest.format !== ARCHIVE_FORMAT)
    throw invalid(`${MANIFEST_ENTRY} does not describe a platform export.`);
  if (manifest.version !== ARCHIVE_VERSION)
    throw invalid(
      `format version ${String(manifest.version)} is not supported (this host reads ${ARCHIVE_VERSION}).`,
    );
  if (!isObject(manifest.tables) || !Object.values(manifest.tables).every(Number.isSafeInteger))
    throw invalid(`${MANIFEST_ENTRY} has no table counts.`);
  if (manifest.clock !== null && !Number.isFinite(manifest.clock))
    throw invalid(`${MANIFEST_ENTRY} has an invalid clock.`);
  const deployment = await reader.json(DEPLOYMENT_ENTRY, LIMITS.importDeploymentBytes);
  const settings = isObject(deployment) ? deployment.settings : undefined;
  if (
    !isObject(settings) ||
    typeof settings.restricted !== "boolean" ||
    !Array.isArray(settings.approved) ||
    !settings.approved.every((email) => typeof email === "string" && email.length <= 320)
  )
    throw invalid(`${DEPLOYMENT_ENTRY} has no valid settings.`);
  return {
    manifest: manifest as unknown as ArchiveManifest,
    settings: {
      restricted: settings.restricted,
      approved: [...new Set((settings.approved as string[]).map((email) => email.toLowerCase()))],
    },
    code: await reader.text(CODE_ENTRY, LIMITS.bundleBytes),
    schema: await reader.json(SCHEMA_ENTRY, LIMITS.importSchemaBytes, LIMITS.importSchemaMembers),
  };
}

/**
 * The most bytes `early-entries.json` can hold for `schema` and the rows read (`ids`): an export
 * writes it without spaces, naming each row (a quoted 22-character id and a comma) at most once
 * per index that keeps early entries, so anything larger is not an export's (and is refused
 * before the host's main thread parses it).
 */
function earlyEntriesBytes(schema: StoredSchema, ids: Map<string, Set<string>>): number {
  let bytes = 2;
  for (const [table, stored] of Object.entries(schema.tables)) {
    const keeping = Object.entries(stored.indexes).filter(([, index]) => index.notBefore !== undefined);
    if (keeping.length === 0) continue;
    bytes += JSON.stringify(table).length + 4;
    for (const [index] of keeping)
      bytes += JSON.stringify(index).length + 4 + 25 * (ids.get(table)?.size ?? 0);
  }
  return bytes;
}

function checkEarlyEntries(
  value: unknown,
  schema: StoredSchema,
  ids: Map<string, Set<string>>,
): EarlyEntries {
  if (!isObject(value)) throw invalid(`${EARLY_ENTRIES_ENTRY} is malformed.`);
  for (const [table, indexes] of Object.entries(value)) {
    if (!isObject(indexes)) throw invalid(`${EARLY_ENTRIES_ENTRY} is malformed.`);
    for (const [index, list] of Object.entries(indexes)) {
      if (schema.tables[table]?.indexes[index]?.notBefore === undefined)
        throw invalid(`${EARLY_ENTRIES_ENTRY} names ${table}.${index}, which keeps no such entries.`);
      if (!Array.isArray(list) || !list.every((id) => isRowIdShape(id) && ids.get(table)?.has(id)))
        throw invalid(`${EARLY_ENTRIES_ENTRY} names rows that are not in ${table}.`);
    }
  }
  return value as EarlyEntries;
}

/**
 * Reads every table's rows, checked against `schema` (ids well-formed and unique, `createdAt`
 * valid, fields as the schema admits them), within `LIMITS.importRowBytes` and each line within
 * `LIMITS.bytesWritten` (the largest row a mutation stores); the clock is moved up
 * to the latest `createdAt` so later inserts sort after every imported row.
 */
export async function readArchiveData(
  reader: ArchiveReader,
  head: ArchiveHead,
  schema: StoredSchema,
  onRows?: (done: number) => void,
): Promise<DeploymentData> {
  const declared = Object.keys(schema.tables);
  const counted = Object.keys(head.manifest.tables);
  if (counted.length !== declared.length || counted.some((t) => !Object.hasOwn(schema.tables, t)))
    throw invalid(`the tables of ${MANIFEST_ENTRY} are not those of the schema.`);
  let bytes = 0;
  for (const table of declared) bytes += reader.size(tableEntry(table));
  if (bytes > LIMITS.importRowBytes)
    throw new PlatformError(
      "too_large",
      `The archive holds ${bytes} bytes of rows; an import takes at most ${LIMITS.importRowBytes}.`,
    );
  const tables = new Map<string, string[]>();
  const ids = new Map<string, Set<string>>();
  const latest = Date.now() + LIMITS.importClockAheadMs;
  let clock = head.manifest.clock;
  if (clock !== null && (clock < 0 || clock > latest))
    throw invalid(`${MANIFEST_ENTRY} has a clock outside 0 to ${new Date(latest).toISOString()}.`);
  let done = 0;
  for (const table of declared) {
    const spec = schema.tables[table]?.spec as NonNullable<StoredSchema["tables"][string]>["spec"];
    const rows: string[] = [];
    const seen = new Set<string>();
    const name = tableEntry(table);
    // A row is at most what one mutation could store of it: a longer line is refused as it
    // inflates, never parsed, stored, or read back later on the host's main thread.
    const lines = reader.lines(name, LIMITS.importRowBytes, LIMITS.bytesWritten, ROW_LINE_REASON);
    for await (const [line, number] of lines) {
      const row = checkImportedRow(table, spec, line, `${name} line ${number}`);
      if (seen.has(row.id)) throw invalid(`${name} line ${number}: row ${row.id} appears twice.`);
      if (row.createdAt < 0 || row.createdAt > latest)
        throw invalid(
          `${name} line ${number} (row ${row.id}) was created at ${row.createdAt}, outside 0 to ${new Date(latest).toISOString()} (this host's clock, and a day).`,
        );
      seen.add(row.id);
      rows.push(row.json);
      clock = clock === null ? row.createdAt : Math.max(clock, row.createdAt);
      if (++done % 10_000 === 0) onRows?.(done);
    }
    if (rows.length !== head.manifest.tables[table])
      throw invalid(`${name} has ${rows.length} rows; the manifest says ${head.manifest.tables[table]}.`);
    tables.set(table, rows);
    ids.set(table, seen);
  }
  onRows?.(done);
  const early = await reader.json(EARLY_ENTRIES_ENTRY, earlyEntriesBytes(schema, ids));
  const earlyEntries = checkEarlyEntries(early, schema, ids);
  return { schema, clock, earlyEntries, tables };
}

/**
 * Reads the object records and checks every object's bytes as an upload's are checked; null when
 * the archive has no objects or `include` is false. Every file of the archive must be one the
 * format names (an unknown one means the archive is not what it claims).
 */
export async function readArchiveObjects(
  reader: ArchiveReader,
  head: ArchiveHead,
  schema: StoredSchema,
  transfer: ObjectTransfer,
  include: boolean,
  /**
   * Refuses objects that will not fit, from their records' sizes, before any object's bytes are
   * unzipped and checked: an archive of 10 KB files that unzip to 5 MiB of SVG each held the
   * markup check, and every other developer's import, for hours before its quota refused it (an
   * attack review, 2026-12-06).
   */
  checkFits: (objects: ArchivedObject[]) => Promise<void> = async () => {},
): Promise<ArchivedObject[] | null> {
  const objects: ArchivedObject[] = [];
  const keys = new Set<string>();
  if (reader.has(OBJECTS_ENTRY)) {
    for await (const [line, number] of reader.lines(OBJECTS_ENTRY, 64 * 1024 * 1024)) {
      const where = `${OBJECTS_ENTRY} line ${number}`;
      // A record is one object of six members: anything with far more shape is refused before
      // the host's main thread parses it (one line of `[{},{},...]` costs as schema.json's would).
      if (containersMoreThan(line, 1) || membersMoreThan(line, RECORD_SHAPE))
        throw invalid(`${where} holds more objects, arrays or members than an object record.`);
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw invalid(`${where} is not JSON.`);
      }
      const object = checkArchivedObject(value, where, transfer.objects.limits.fileSize);
      if (keys.has(object.key)) throw invalid(`${where}: object ${object.key} appears twice.`);
      keys.add(object.key);
      objects.push(object);
    }
  }
  const known = new Set([MANIFEST_ENTRY, DEPLOYMENT_ENTRY, CODE_ENTRY, SCHEMA_ENTRY, EARLY_ENTRIES_ENTRY]);
  for (const table of Object.keys(schema.tables)) known.add(tableEntry(table));
  if (reader.has(OBJECTS_ENTRY)) known.add(OBJECTS_ENTRY);
  for (const key of keys) known.add(objectEntry(key));
  const unknown = reader.names().find((name) => !known.has(name));
  if (unknown) throw invalid(`${unknown} is not part of the export format.`);
  if (!reader.has(OBJECTS_ENTRY) || !include) return null;
  if (head.manifest.objects?.count !== objects.length)
    throw invalid(`${OBJECTS_ENTRY} lists ${objects.length} objects; the manifest says otherwise.`);
  if (objects.length > 0) await checkFits(objects);
  for (const object of objects) {
    // A file of other size than its record says is a broken archive, not a large one.
    if (reader.size(objectEntry(object.key)) !== object.size)
      throw invalid(`the bytes of ${object.key} are not the ${object.size} its record says.`);
    await transfer.checkBytes(object, await reader.read(objectEntry(object.key), object.size));
  }
  return objects;
}
