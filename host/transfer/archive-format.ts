/**
 * The export archive (docs/operators.md "Export and import"): one zip file per deployment.
 *
 *   platform-export.json          the manifest (written last: it counts what came before)
 *   deployment.json               declaration, access settings, names of env keys (never values)
 *   code.js                       the capsule bundle the deployment served
 *   schema.json                   the stored schema: tables, index records (storage ids), late defaults
 *   early-entries.json            rows indexed by a hidden userId() index before its notBefore
 *   tables/<table>.jsonl          every row as stored, one JSON object per line (id, createdAt, fields)
 *   objects.jsonl                 with objects: one record per line (key, size, type, uploader, time)
 *   objects/<public|private>/<id> with objects: the bytes
 */
import { isValidName } from "../../sdk/values/index.js";
import type { EarlyEntries } from "../db/index.js";
import { OBJECT_KEY } from "../storage/index.js";

/** The archive format's name and version in the manifest; an import refuses others. */
export const ARCHIVE_FORMAT = "platform-deployment-export";
export const ARCHIVE_VERSION = 1;

export const MANIFEST_ENTRY = "platform-export.json";
export const DEPLOYMENT_ENTRY = "deployment.json";
export const CODE_ENTRY = "code.js";
export const SCHEMA_ENTRY = "schema.json";
export const EARLY_ENTRIES_ENTRY = "early-entries.json";
export const OBJECTS_ENTRY = "objects.jsonl";

/** The rows of `table`. */
export function tableEntry(table: string): string {
  return `tables/${table}.jsonl`;
}

/** The bytes of object `key` (`public/<id>` or `private/<id>`). */
export function objectEntry(key: string): string {
  return `objects/${key}`;
}

const FIXED_ENTRIES = new Set([
  MANIFEST_ENTRY,
  DEPLOYMENT_ENTRY,
  CODE_ENTRY,
  SCHEMA_ENTRY,
  EARLY_ENTRIES_ENTRY,
  OBJECTS_ENTRY,
]);
const FOLDERS = new Set(["tables/", "objects/", "objects/public/", "objects/private/"]);

/**
 * Whether `name` can be an entry of the format (above), or a folder of it: what an import's
 * directory may hold, checked as it is read (which ones the archive must hold, later).
 */
export function isFormatEntry(name: string): boolean {
  if (FIXED_ENTRIES.has(name) || FOLDERS.has(name)) return true;
  if (name.startsWith("objects/")) return OBJECT_KEY.test(name.slice("objects/".length));
  return name.startsWith("tables/") && name.endsWith(".jsonl") && isValidName(name.slice(7, -6));
}

/** What `platform-export.json` says. */
export interface ArchiveManifest {
  format: typeof ARCHIVE_FORMAT;
  version: typeof ARCHIVE_VERSION;
  /** The deployment it was exported from. */
  deployment: string;
  exportedAt: string;
  /** Database API version of the code: 0 legacy, 1 current. */
  apiVersion: number;
  /** SHA-256 of code.js. */
  artifact: string;
  /** The deployment's clock: the last `createdAt` handed out (null before any insert). */
  clock: number | null;
  /** Rows per table. */
  tables: Record<string, number>;
  /** Objects and their bytes; null when the export left objects out. */
  objects: { count: number; bytes: number; deletedDuringExport: number } | null;
}

/** What `deployment.json` says. */
export interface ArchiveDeployment {
  declaration: unknown;
  settings: { restricted: boolean; approved: string[] };
  /** Names of the env values the deployment had (values are never exported). */
  envKeys: string[];
}

export type { EarlyEntries };
