import { createReadStream, createWriteStream, type ReadStream } from "node:fs";
import { rm, stat, statfs } from "node:fs/promises";
import { join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { RunningExport } from "./export-archive.js";
import type { UploadFolder } from "./upload-folder.js";

/**
 * An export's archive, written whole to a private file of the host's upload folder with its
 * snapshot closed: its client reads the file at its own pace, holding no database snapshot.
 */
export interface WrittenExport {
  /** The archive's size (the answer's Content-Length). */
  readonly bytes: number;
  /** The archive's bytes, from the start. */
  open(): ReadStream;
  /** Removes the file (and gives back what the export held); safe to call twice. */
  discard(): Promise<void>;
}

/**
 * Passes an archive through, failing it (`503 unavailable`) when the disk holding `dir` has less
 * than {@link LIMITS.exportDiskReserveBytes} free: at its first bytes and every
 * {@link LIMITS.exportSpaceCheckBytes} after.
 */
function leavingFreeSpace(dir: string): Transform {
  let unchecked = Number.POSITIVE_INFINITY;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      unchecked += chunk.length;
      if (unchecked < LIMITS.exportSpaceCheckBytes) return done(null, chunk);
      unchecked = 0;
      statfs(dir).then(({ bavail, bsize }) => {
        if (bavail * bsize >= LIMITS.exportDiskReserveBytes) return done(null, chunk);
        done(
          new PlatformError(
            "unavailable",
            "The host's disk has too little free space to write this export; retry later, or export without stored files (?objects=0).",
            { retryAfterSeconds: 60 },
          ),
        );
      }, done);
    },
  });
}

/**
 * Writes the archive `start` begins into a new subfolder of `uploads` within
 * {@link LIMITS.exportWriteMs} (`503 unavailable` after), or until `signal` aborts (its client
 * left); the archive's snapshot is closed when this settles, either way. `release` runs once the
 * file is removed, or at once when the export fails.
 */
export async function writeExport(
  uploads: UploadFolder,
  start: () => Promise<RunningExport>,
  signal: AbortSignal,
  release: () => void,
): Promise<WrittenExport> {
  let dir: string | undefined;
  try {
    dir = await uploads.create();
    const path = join(dir, "export.zip");
    const running = await start();
    const tooSlow = AbortSignal.timeout(LIMITS.exportWriteMs);
    const stop = () => running.abort();
    const stops = AbortSignal.any([signal, tooSlow]);
    stops.addEventListener("abort", stop);
    try {
      if (stops.aborted) stop();
      const file = createWriteStream(path, { mode: 0o600 });
      await pipeline(running.stream, leavingFreeSpace(dir), file, { signal: stops });
    } catch (error) {
      // A failure of the file (a full disk) stops the archive's writer too, which would otherwise
      // wait forever for its entry to be read, holding the snapshot.
      stop();
      if (!tooSlow.aborted) throw error;
      const minutes = LIMITS.exportWriteMs / 60_000;
      throw new PlatformError(
        "unavailable",
        `The host could not write this export in ${minutes} minutes; retry later, or export without stored files (?objects=0).`,
        { retryAfterSeconds: 60 },
      );
    } finally {
      stops.removeEventListener("abort", stop);
      // The snapshot is closed once the archive's writer has stopped.
      await running.done;
    }
    const bytes = (await stat(path)).size;
    const folder = dir;
    let discarded: Promise<void> | undefined;
    return {
      bytes,
      open: () => createReadStream(path),
      discard: () => {
        discarded ??= rm(folder, { recursive: true, force: true }).finally(release);
        return discarded;
      },
    };
  } catch (error) {
    if (dir) await rm(dir, { recursive: true, force: true });
    release();
    throw error;
  }
}
