/**
 * `platform import` and `platform export`: what an import archive may hold, and how long an export may
 * hold its read snapshot.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const IMPORT_EXPORT_LIMITS = {
  /**
   * `platform import`: the archive as uploaded, and the rows (JSON, uncompressed) it may carry.
   * Ours: an import is written as ONE atomic batch (all-or-nothing across a crash), which the host
   * holds in memory with the index entries it rebuilds; larger apps need a streaming scheme.
   */
  importArchiveBytes: 512 * 1024 * 1024,
  importRowBytes: 128 * 1024 * 1024,
  /**
   * Rows, index entries and counts one import writes together (each row counts once, and once
   * more for each index of its table, refused before any is built; each distinct value of a
   * counted index prefix once more, refused as they come): the batch is held in memory whole,
   * about a kilobyte of the host's heap each, on its main thread (3.2 million took 115 s and 3.8
   * GiB; 5 million ended the host). Ours, until imports stream.
   */
  importOperations: 1_000_000,
  /**
   * How far past the importing host's clock an archive's `createdAt` values and clock may be (an
   * exporting host's clock ahead of this one's). Ours: a later one would move the deployment's
   * clock past where its steps of 1/1024 ms still add up (about the year 2109), and every later
   * insert would share one `createdAt`.
   */
  importClockAheadMs: 24 * 60 * 60 * 1000,
  /** Files in one import archive (each stored object is one). Ours. */
  importArchiveEntries: 200_000,
  /**
   * Bytes of one file's name in an import archive. Ours: an export's longest name is a table's
   * rows (`tables/<table>.jsonl`, a table's name at most 64 characters: 77 bytes); the
   * directory's names are kept in memory while an import waits for its turn.
   */
  importEntryNameBytes: 128,
  /**
   * Uncompressed bytes of an import archive's `schema.json` and `deployment.json`, each checked
   * (with {@link LIMITS.jsonMembers} objects, arrays and members, `schema.json` with
   * {@link LIMITS.importSchemaMembers}) before the host's main thread parses it: 70 KB of zip
   * inflating to 64 MiB of `{},` held it for two minutes. Ours: a stored schema is its declared
   * tables with one short record per field and index, about 2.6 KiB and 150 members for a table
   * of 30 fields and 10 indexes, so 4 MiB holds some 1,500 such tables (deploys bound a schema only
   * by the declaration's {@link LIMITS.resultBytes}); `deployment.json` repeats the declaration
   * beside the approved emails (one settings request, {@link LIMITS.requestBodyBytes}) and the
   * names of at most {@link LIMITS.envValues} env values (0.8 MiB).
   */
  importSchemaBytes: 4 * 1024 * 1024,
  /**
   * Objects, arrays and members of an import's `schema.json`: room for the 4 MiB above filled with
   * real tables (a parse of this many costs the main thread a few hundred milliseconds, once per
   * import, and a developer imports one archive at a time). Ours.
   */
  importSchemaMembers: 1024 * 1024,
  importDeploymentBytes: 4 * 1024 * 1024,
  /**
   * How long an export waits for a read snapshot of the host's own share, holding its
   * deployment's lifecycle lock (`503 unavailable` after). Ours.
   */
  exportSnapshotWaitMs: 5000,
  /**
   * How long the host may take to write an export's archive to its disk from the snapshot
   * (`503 unavailable` after): the snapshot is closed before the client reads a byte, as on
   * PostgreSQL it keeps every tenant's dead rows from being cleaned up (they share one table), and
   * a client reading 64 KiB every two minutes kept one open for half an hour. Ours: the host
   * writes a 512 MiB archive in seconds.
   */
  exportWriteMs: 10 * 60_000,
  /**
   * Free space an export leaves on the host's disk (`503 unavailable` when its archive would take
   * it), checked before its first byte and every {@link LIMITS.exportSpaceCheckBytes} after:
   * archives wait on the disk that holds every tenant's data. Ours.
   */
  exportDiskReserveBytes: 512 * 1024 * 1024,
  exportSpaceCheckBytes: 16 * 1024 * 1024,
  /**
   * How long a written export's client may go without reading before it is stopped and its file
   * removed (each holds its deployment's size of the host's disk until it is read). Ours.
   */
  exportStalledMs: 120_000,
  /** What an export's client must read in {@link LIMITS.exportStalledMs} to keep it going. Ours. */
  exportProgressBytes: 64 * 1024,
  /** How long a written export may take to be read, however steadily: its file is on disk. Ours. */
  exportMaxMs: 30 * 60_000,
} as const;
