import { isPlatformError } from "../../sdk/values/index.js";
import { everyKey, type HostDatabase, type KvSnapshot } from "../db/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { type BlobHold, blobKeyOf, type ObjectService, objectRecordPages } from "../storage/index.js";
import {
  BACKUP_FORMAT,
  BACKUP_VERSION,
  type BackupHead,
  type BackupLine,
  type BackupTotals,
  ENTRIES_PER_LINE,
  ENTRY_LINE_BYTES,
} from "./backup-format.js";

/** What a backup reads of the host. */
export interface BackupSource {
  db: HostDatabase;
  deployments: DeploymentService;
  objects: ObjectService;
  /** Where a failure that is not a PlatformError is reported (the stream only says `internal`). */
  onInternalError?: (error: unknown) => void;
}

/** A started backup: its head, its lines (each ending in `\n`), and how to stop it early. */
export interface RunningBackup {
  head: BackupHead;
  lines: AsyncGenerator<string>;
  /** Ends the backup: closes the snapshot and lets held deletions go on (safe to call twice). */
  close(): Promise<void>;
}

function line(value: BackupLine): string {
  return `${JSON.stringify(value)}\n`;
}

/**
 * The snapshot of the whole store. On the embedded store it is taken holding every deployment's
 * lifecycle lock, so no deploy, import or delete is halfway in it (an export's rule, for all of
 * them at once), taken together when all are free: waiting for one slow import, it holds up no
 * other deployment's deploy. When they are never all free together (a developer keeping one busy
 * at all times), and on a shared store (PostgreSQL), whose locks each hold a connection, too many
 * at once, the snapshot is taken as it comes, like `pg_dump`'s (docs/operators.md says so): taking
 * the locks one after another held every other deployment's while it waited for the busy one.
 */
async function takeSnapshot(
  source: BackupSource,
  signal: AbortSignal,
  hold: () => void,
): Promise<KvSnapshot> {
  const take = async () => {
    // The client left while the locks were awaited: nothing is taken.
    signal.throwIfAborted();
    hold();
    return source.db.store.snapshot();
  };
  if (source.db.shared) return take();
  const ids = (await source.deployments.list()).map((record) => record.id).sort();
  return source.deployments.whileAllLocked(ids, take, signal);
}

/** Counts what `snapshot` holds: entries (keys only), object records and their bytes. */
async function countSnapshot(
  source: BackupSource,
  snapshot: KvSnapshot,
  signal: AbortSignal,
): Promise<Omit<BackupTotals, "missing">> {
  let entries = 0;
  const iterator = snapshot.iterate(Object.assign(everyKey(), { keys: false, values: false }));
  try {
    for (;;) {
      signal.throwIfAborted();
      const batch = await iterator.next(10_000);
      if (batch.length === 0) break;
      entries += batch.length;
    }
  } finally {
    await iterator.close();
  }
  let objects = 0;
  let objectBytes = 0;
  for await (const page of objectRecordPages(source.db.store, snapshot)) {
    objects += page.length;
    for (const record of page) objectBytes += record.size;
  }
  return { entries, objects, objectBytes };
}

/** Every entry of `snapshot`, as `entries` lines of at most {@link ENTRIES_PER_LINE} (or ~1 MiB). */
async function* entryLines(snapshot: KvSnapshot, totals: BackupTotals): AsyncGenerator<string> {
  const iterator = snapshot.iterate(everyKey());
  try {
    for (;;) {
      const batch = await iterator.next(ENTRIES_PER_LINE);
      if (batch.length === 0) return;
      let pending: Array<[string, string]> = [];
      let bytes = 0;
      for (const [key, value] of batch) {
        pending.push([key.toString("base64"), value]);
        bytes += key.length + value.length;
        if (bytes >= ENTRY_LINE_BYTES) {
          totals.entries += pending.length;
          yield line({ entries: pending });
          pending = [];
          bytes = 0;
        }
      }
      if (pending.length > 0) {
        totals.entries += pending.length;
        yield line({ entries: pending });
      }
    }
  } finally {
    await iterator.close();
  }
}

/** The bytes of every object record of `snapshot`; a record whose bytes are gone is a `missing` line. */
async function* objectLines(
  source: BackupSource,
  snapshot: KvSnapshot,
  totals: BackupTotals,
): AsyncGenerator<string> {
  for await (const page of objectRecordPages(source.db.store, snapshot)) {
    for (const record of page) {
      const key = blobKeyOf(record);
      const bytes = await source.objects.blobs.get(key);
      if (!bytes) {
        totals.missing.push(key);
        yield line({ missing: { key } });
        continue;
      }
      totals.objects++;
      totals.objectBytes += bytes.length;
      yield line({ object: { key, data: bytes.toString("base64") } });
    }
  }
}

async function* backupLines(
  source: BackupSource,
  snapshot: KvSnapshot,
  head: BackupHead,
  close: () => Promise<void>,
): AsyncGenerator<string> {
  try {
    yield line({ head });
    const totals: BackupTotals = { entries: 0, objects: 0, objectBytes: 0, missing: [] };
    yield* entryLines(snapshot, totals);
    yield* objectLines(source, snapshot, totals);
    yield line({ end: totals });
  } catch (error) {
    if (!isPlatformError(error)) source.onInternalError?.(error);
    const failure = isPlatformError(error)
      ? error.toJSON()
      : { code: "internal", message: "The backup failed on the host; see its log." };
    yield line({ error: failure });
  } finally {
    await close();
  }
}

/**
 * Starts a backup of the whole host: takes one snapshot of the store, holding every removal of
 * object bytes from just before it (so each object record of the snapshot keeps its bytes until
 * they are copied), counts it, and returns the lines of backup-format.ts streamed from that
 * snapshot while the host keeps serving. Writes acknowledged before the snapshot are in it; none
 * made after is. `signal` (the client left) stops it before the snapshot or while counting; the
 * wait for the locks before it ends only when they are free.
 */
export async function startBackup(source: BackupSource, signal: AbortSignal): Promise<RunningBackup> {
  // Held from just before the snapshot, not while the locks are awaited: a tenant's long
  // migration would have held every deletion of the host meanwhile.
  let held: BlobHold | undefined;
  let snapshot: KvSnapshot | undefined;
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      await snapshot?.close().catch(() => {});
      // The held removals run after the response, not before its end.
      void held?.release();
    })();
    return closed;
  };
  try {
    snapshot = await takeSnapshot(source, signal, () => {
      held = source.objects.holdDeletions();
    });
    held?.snapshotTaken();
    const takenAt = new Date().toISOString();
    const counted = await countSnapshot(source, snapshot, signal);
    const head: BackupHead = {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      takenAt,
      store: source.db.store.kind,
      ...counted,
    };
    return { head, lines: backupLines(source, snapshot, head, close), close };
  } catch (error) {
    await close();
    throw error;
  }
}
