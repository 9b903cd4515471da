import { Readable } from "node:stream";
import { finished } from "node:stream/promises";
import { ZipFile } from "yazl";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { type HostDatabase, type KvSnapshot, readDataHead, tableRows } from "../db/index.js";
import type { DeploymentRecord, DeploymentService } from "../deployments/index.js";
import { archivedObject, type ObjectTransfer } from "../storage/index.js";
import {
  ARCHIVE_FORMAT,
  ARCHIVE_VERSION,
  type ArchiveDeployment,
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

/** What an export needs of the host. */
export interface ExportParts {
  db: HostDatabase;
  deployments: DeploymentService;
  objects: ObjectTransfer;
}

/** A started export: the zip as it is written, and how to stop it (the client went away). */
export interface RunningExport {
  stream: NodeJS.ReadableStream;
  abort(): void;
  /** Settles when the archive is written (or the export failed or was aborted). */
  done: Promise<void>;
}

/** What to export; `recheck`: the caller's access, checked again on the record read under the lock. */
export interface ExportOptions {
  objects: boolean;
  recheck?: (record: DeploymentRecord) => void;
}

/**
 * Takes one snapshot of deployment `id` while holding its lifecycle lock (so no deploy is halfway
 * between its schema and its record), then streams the archive of archive-format.ts from that
 * snapshot: the app keeps taking writes meanwhile, and none of them is in the archive. Objects are
 * listed from the snapshot; one deleted before its bytes are read is left out (and counted).
 */
export async function startExport(
  parts: ExportParts,
  id: string,
  options: ExportOptions,
): Promise<RunningExport> {
  const { snapshot, record, code } = await parts.deployments.whileLocked(id, async () => {
    const record = await parts.deployments.get(id);
    if (!record) throw new PlatformError("not_found", `No deployment named ${id}.`);
    // Access was checked on a record read before the lock: the id may name another one by now.
    options.recheck?.(record);
    // Read under the lock: a deploy waiting for it removes the bundle it replaces.
    const code = await parts.deployments.artifactCode(record.artifact);
    // The host's own read (not the developer's share): taken under the lifecycle lock, it must not
    // wait there for the developer's busy app to give connections back; nor for long for the
    // host's, which other exports may hold (the lock would hold every deploy of this id meanwhile).
    return { snapshot: await snapshotWithin(parts.db, LIMITS.exportSnapshotWaitMs), record, code };
  });
  const zip = new ZipFile();
  const controller = new AbortController();
  // yazl re-emits an entry's stream error (an abort) on the zip: without a listener that would be
  // an uncaught exception, ending the host. The export is over either way.
  zip.on("error", (error: Error) => {
    controller.abort();
    (zip.outputStream as Readable).destroy(error);
  });
  const done = writeArchive(parts, zip, snapshot, { record, code }, options, controller.signal)
    .catch((error: unknown) => {
      (zip.outputStream as Readable).destroy(error as Error);
    })
    .finally(() => snapshot.close());
  return { stream: zip.outputStream, abort: () => controller.abort(), done };
}

/**
 * A read snapshot of the host's own share, or `503 unavailable` when none is free within `ms`
 * (a snapshot taken later is closed at once).
 */
async function snapshotWithin(db: HostDatabase, ms: number): Promise<KvSnapshot> {
  const taking = db.store.snapshot();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void taking.then((snapshot) => snapshot.close()).catch(() => {});
      reject(
        new PlatformError(
          "unavailable",
          "The host's database is busy with other exports; retry in a moment.",
          {
            retryAfterSeconds: 5,
          },
        ),
      );
    }, ms);
  });
  try {
    return await Promise.race([taking, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Adds one entry from `source` and waits until the zip has read all of it (or the export stops). */
async function addEntry(
  zip: ZipFile,
  name: string,
  source: Iterable<Buffer | string> | AsyncIterable<Buffer | string>,
  signal: AbortSignal,
  compress = true,
): Promise<void> {
  const stream = Readable.from(source, { objectMode: false });
  zip.addReadStream(stream, name, { compress });
  const stop = () => stream.destroy(new Error("The export was aborted."));
  signal.addEventListener("abort", stop);
  try {
    if (signal.aborted) stop();
    await finished(stream);
  } finally {
    signal.removeEventListener("abort", stop);
  }
}

async function* jsonLines(batches: AsyncIterable<string[]>, count: { n: number }): AsyncGenerator<string> {
  for await (const rows of batches) {
    count.n += rows.length;
    yield `${rows.join("\n")}\n`;
  }
}

async function writeArchive(
  parts: ExportParts,
  zip: ZipFile,
  snapshot: KvSnapshot,
  { record, code }: { record: DeploymentRecord; code: string },
  options: { objects: boolean },
  signal: AbortSignal,
): Promise<void> {
  const id = record.id;
  const head = await readDataHead(snapshot, id);
  const deployment: ArchiveDeployment = {
    declaration: record.declaration,
    settings: { restricted: record.restricted, approved: record.approved },
    envKeys: Object.keys(record.env),
  };
  await addEntry(zip, DEPLOYMENT_ENTRY, [JSON.stringify(deployment)], signal);
  await addEntry(zip, CODE_ENTRY, [code], signal);
  await addEntry(zip, SCHEMA_ENTRY, [JSON.stringify(head.schema)], signal);
  await addEntry(zip, EARLY_ENTRIES_ENTRY, [JSON.stringify(head.earlyEntries)], signal);
  const tables: Record<string, number> = {};
  for (const table of Object.keys(head.schema.tables)) {
    const count = { n: 0 };
    await addEntry(zip, tableEntry(table), jsonLines(tableRows(snapshot, id, table), count), signal);
    tables[table] = count.n;
  }
  let objects: ArchiveManifest["objects"] = null;
  if (options.objects) {
    objects = { count: 0, bytes: 0, deletedDuringExport: 0 };
    const lines: string[] = [];
    for (const object of await parts.objects.recordsAt(snapshot, id)) {
      const bytes = await parts.objects.bytesOf(object);
      if (!bytes) {
        objects.deletedDuringExport++;
        continue;
      }
      // Stored as they are: uploads are mostly compressed formats already.
      await addEntry(zip, objectEntry(object.key), [bytes], signal, false);
      lines.push(`${JSON.stringify(archivedObject(object))}\n`);
      objects.count++;
      objects.bytes += bytes.length;
    }
    await addEntry(zip, OBJECTS_ENTRY, lines, signal);
  }
  const manifest: ArchiveManifest = {
    format: ARCHIVE_FORMAT,
    version: ARCHIVE_VERSION,
    deployment: id,
    exportedAt: new Date().toISOString(),
    apiVersion: record.declaration.apiVersion,
    artifact: record.artifact,
    clock: head.clock,
    tables,
    objects,
  };
  await addEntry(zip, MANIFEST_ENTRY, [JSON.stringify(manifest, null, 2)], signal);
  zip.end();
}
