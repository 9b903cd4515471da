import { open, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { LIMITS } from "../../sdk/protocol/index.js";
import { ERROR_STATUS, type ErrorCode, PlatformError } from "../../sdk/values/index.js";
import { ClassicKv, everyKey, type KvOperation } from "../db/index.js";
import { blobKeyOf, FsBlobStore, objectRecordPages } from "../storage/index.js";
import {
  BACKUP_FORMAT,
  BACKUP_VERSION,
  type BackupHead,
  type BackupLine,
  type BackupManifest,
  type BackupTotals,
  MANIFEST_FILE,
} from "./backup-format.js";

/** What a restore has written so far, with the head's totals to compare against. */
export interface RestoreProgress {
  head: BackupHead;
  written: BackupTotals;
}

function broken(message: string): PlatformError {
  return new PlatformError("bad_request", `Not a valid host backup: ${message}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function checkHead(value: unknown): BackupHead {
  if (!isObject(value) || value.format !== BACKUP_FORMAT)
    throw broken("the stream does not begin with a backup head.");
  if (value.version !== BACKUP_VERSION)
    throw broken(`format version ${String(value.version)}; this platform reads version ${BACKUP_VERSION}.`);
  for (const name of ["entries", "objects", "objectBytes"])
    if (!Number.isSafeInteger(value[name])) throw broken(`the head has no ${name} count.`);
  if (typeof value.takenAt !== "string" || typeof value.store !== "string")
    throw broken("the head has no takenAt or store.");
  return value as unknown as BackupHead;
}

/**
 * The lines of `stream`, without their `\n`, each at most {@link LIMITS.backupLineBytes}.
 * Iterating the stream itself (not readline) makes a connection that breaks midway an error here,
 * never a stream that just ends or hangs.
 */
async function* linesOf(
  stream: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
): AsyncGenerator<string> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of stream) {
    let data = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    for (let at = data.indexOf(10); at !== -1; at = data.indexOf(10)) {
      pending.push(data.subarray(0, at));
      yield Buffer.concat(pending).toString("utf8");
      pending = [];
      pendingBytes = 0;
      data = data.subarray(at + 1);
    }
    pendingBytes += data.length;
    if (pendingBytes > LIMITS.backupLineBytes)
      throw broken(`a line is longer than ${LIMITS.backupLineBytes} bytes, more than any backup line.`);
    if (data.length > 0) pending.push(data);
  }
  if (pending.length > 0) yield Buffer.concat(pending).toString("utf8");
}

/** Fsyncs every file and folder under `dir` (and `dir`): a backup is on disk once it says so. */
async function syncTree(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await syncTree(path);
    else if (entry.isFile()) await syncPath(path);
  }
  await syncPath(dir);
}

async function syncPath(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes the entries and objects of a backup stream into a fresh store and blob folder. */
class RestoreWriter {
  head: BackupHead | undefined;
  end: BackupTotals | undefined;
  readonly written: BackupTotals = { entries: 0, objects: 0, objectBytes: 0, missing: [] };
  /** Blob key -> size of every object written, checked against the records at the end. */
  readonly objectSizes = new Map<string, number>();
  private lastKey: Buffer | undefined;
  private readonly range = everyKey();

  constructor(
    readonly kv: ClassicKv,
    private readonly blobs: FsBlobStore,
  ) {}

  async take(line: BackupLine): Promise<void> {
    if ("error" in line) {
      const { code, message } = isObject(line.error) ? line.error : {};
      throw new PlatformError(
        typeof code === "string" && Object.hasOwn(ERROR_STATUS, code) ? (code as ErrorCode) : "internal",
        `The host could not finish the backup: ${String(message)}`,
      );
    }
    if (!this.head) {
      if (!("head" in line)) throw broken("the stream does not begin with a backup head.");
      this.head = checkHead(line.head);
      return;
    }
    if (this.end) throw broken("lines follow the end line.");
    if ("entries" in line) await this.entries(line.entries);
    else if ("object" in line) await this.object(line.object);
    else if ("missing" in line) {
      if (!isObject(line.missing) || typeof line.missing.key !== "string")
        throw broken("a missing line has no key.");
      this.written.missing.push(line.missing.key);
    } else if ("end" in line) this.end = line.end;
    else throw broken("a line of an unknown kind.");
  }

  private async entries(entries: unknown): Promise<void> {
    if (this.written.objects > 0 || this.written.missing.length > 0)
      throw broken("entries follow the objects.");
    if (!Array.isArray(entries)) throw broken("an entries line is not a list.");
    const operations: KvOperation[] = [];
    for (const entry of entries) {
      if (!Array.isArray(entry) || typeof entry[0] !== "string" || typeof entry[1] !== "string")
        throw broken("an entry is not [key, value].");
      const key = Buffer.from(entry[0], "base64");
      // Keys come once each, in order, inside the host's keyspace: anything else is not a backup.
      if (
        Buffer.compare(key, this.range.gte) < 0 ||
        Buffer.compare(key, this.range.lt) >= 0 ||
        (this.lastKey && Buffer.compare(key, this.lastKey) <= 0)
      )
        throw broken("entries are out of order.");
      this.lastKey = key;
      operations.push({ type: "put", key, value: entry[1] });
    }
    if (operations.length > 0) await this.kv.batch(operations);
    this.written.entries += operations.length;
  }

  private async object(object: unknown): Promise<void> {
    if (!isObject(object) || typeof object.key !== "string" || typeof object.data !== "string")
      throw broken("an object line has no key or data.");
    if (this.objectSizes.has(object.key)) throw broken(`object ${object.key} comes twice.`);
    const bytes = Buffer.from(object.data, "base64");
    await this.blobs.put(object.key, bytes);
    this.objectSizes.set(object.key, bytes.length);
    this.written.objects++;
    this.written.objectBytes += bytes.length;
  }

  /** Checks the end line, the head's totals and every object record against what was written. */
  async verify(): Promise<void> {
    const { head, end, written } = this;
    if (!head || !end) throw new PlatformError("unavailable", "The backup stream ended early; run it again.");
    const same =
      end.entries === written.entries &&
      end.objects === written.objects &&
      end.objectBytes === written.objectBytes &&
      Array.isArray(end.missing) &&
      end.missing.length === written.missing.length &&
      head.entries === written.entries &&
      head.objects === written.objects + written.missing.length;
    if (!same) throw broken("what arrived does not add up to the totals the host sent.");
    const missing = new Set(written.missing);
    let records = 0;
    for await (const page of objectRecordPages(this.kv)) {
      for (const record of page) {
        const key = blobKeyOf(record);
        records++;
        if (missing.has(key)) continue;
        if (this.objectSizes.get(key) !== record.size)
          throw broken(`the bytes of object ${key} are not the ${record.size} its record says.`);
      }
    }
    if (records !== this.objectSizes.size + missing.size)
      throw broken("objects arrived that no record names.");
  }
}

/**
 * Writes a host backup stream (backup-format.ts) into `dir` as a data folder `platform host
 * --data <dir>` starts from: a new embedded database (`db/`) holding every entry, the object bytes
 * (`blobs/`), and `backup.json`. Everything is checked as it arrives (format, key order, totals,
 * each object record against its bytes) and synced to disk before it resolves. `dir` should be
 * new: the caller moves it into place only once this resolves. No operator token is written.
 */
export async function restoreBackup(
  stream: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  dir: string,
  onProgress?: (progress: RestoreProgress) => void,
): Promise<BackupManifest> {
  const kv = await ClassicKv.open(join(dir, "db"));
  const writer = new RestoreWriter(kv, await FsBlobStore.open(join(dir, "blobs")));
  try {
    for await (const text of linesOf(stream)) {
      if (text === "") continue;
      let line: BackupLine;
      try {
        line = JSON.parse(text) as BackupLine;
      } catch {
        throw broken("a line is not JSON.");
      }
      if (!isObject(line)) throw broken("a line is not a JSON object.");
      await writer.take(line);
      if (writer.head) onProgress?.({ head: writer.head, written: writer.written });
    }
    await writer.verify();
  } finally {
    await kv.close();
  }
  const head = writer.head as BackupHead;
  const manifest: BackupManifest = {
    format: BACKUP_FORMAT,
    version: BACKUP_VERSION,
    takenAt: head.takenAt,
    store: head.store,
    restoredAt: new Date().toISOString(),
    totals: writer.written,
  };
  await writeFile(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  await syncTree(dir);
  return manifest;
}
