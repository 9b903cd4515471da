/**
 * The host backup stream (`GET /v1/backup`), format version 1: newline-delimited JSON, one object
 * per line, in this order:
 *
 *   { "head": BackupHead }                         totals, known before anything else is sent
 *   { "entries": [[<key, base64>, <value>], ...] } every key of the snapshot, in key order
 *   { "object": { "key", "data": <base64> } }      the bytes of every object record of the snapshot
 *   { "missing": { "key" } }                       an object record whose bytes were not found
 *   { "end": BackupTotals }                        what was sent; a stream without it is cut short
 *   { "error": { "code", "message" } }             instead of the rest, when the backup failed
 *
 * `restoreBackup` (restore.ts) turns the stream into a data folder `platform host --data` starts
 * from; the folder's `backup.json` is {@link BackupManifest}.
 */

export const BACKUP_FORMAT = "platform-host-backup";
export const BACKUP_VERSION = 1;

/** The name of the manifest a restored data folder carries. */
export const MANIFEST_FILE = "backup.json";

/** Counts of a backup: sent in the head (expected) and at the end (sent). */
export interface BackupTotals {
  /** Key-value entries: every record, row, index entry and count of the host. */
  entries: number;
  /** Stored objects (files) whose bytes are in the backup. */
  objects: number;
  objectBytes: number;
  /** Blob keys of object records whose bytes were not found (see docs/operators.md). */
  missing: string[];
}

/** The first line: what the backup is, and the totals to expect (for progress). */
export interface BackupHead {
  format: typeof BACKUP_FORMAT;
  version: typeof BACKUP_VERSION;
  /** When the snapshot was taken (ISO 8601). */
  takenAt: string;
  /** The source's store: `classic-level` or `postgres`. */
  store: string;
  /** The totals of the snapshot: entries, object records and their bytes. */
  entries: number;
  objects: number;
  objectBytes: number;
}

/** `backup.json` in a restored data folder: the head, and what was written. */
export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: typeof BACKUP_VERSION;
  takenAt: string;
  store: string;
  restoredAt: string;
  totals: BackupTotals;
}

/** One line of the stream. */
export type BackupLine =
  | { head: BackupHead }
  | { entries: Array<[key: string, value: string]> }
  | { object: { key: string; data: string } }
  | { missing: { key: string } }
  | { end: BackupTotals }
  | { error: { code: string; message: string } };

/** Entries per `entries` line at most, and the value bytes after which a line is sent early. */
export const ENTRIES_PER_LINE = 1000;
export const ENTRY_LINE_BYTES = 1024 * 1024;
