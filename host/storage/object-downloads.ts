import { pipeline, type Readable, Transform } from "node:stream";
import { PlatformError } from "../../sdk/values/index.js";
import type { BlobStore } from "./blob-store.js";
import { type DownloadType, downloadType, markupCheckDue } from "./download-type.js";
import { markupChecker } from "./markup-checker.js";
import { MARKUP_RULES_VERSION } from "./markup-script.js";
import type { ObjectRecord } from "./object-records.js";

/** What one download sends: the object's bytes (a stream, or whole), and how they are served. */
export interface ObjectDownload {
  body: Buffer | Readable;
  type: DownloadType;
}

/** What a download needs of the object service. */
export interface DownloadSource {
  readonly blobs: BlobStore;
  bytes(record: ObjectRecord): Promise<Buffer>;
  markChecked(record: ObjectRecord): Promise<void>;
}

/** The blob of a recorded object as `read` gives it: `503 unavailable` when the store fails or it is missing. */
async function blobOf<T>(record: ObjectRecord, read: (key: string) => Promise<T | undefined>): Promise<T> {
  const found = await read(`${record.deployment}/${record.key}`).catch((error: unknown) => {
    throw new PlatformError("unavailable", "Storage is temporarily unavailable; retry later.", {
      cause: error,
    });
  });
  if (found === undefined)
    throw new PlatformError("unavailable", "The object's bytes are missing; retry later.");
  return found;
}

/**
 * The bytes of a recorded object, read whole by `read`: `503 unavailable` when the store fails,
 * they are missing, or they are not as long as the record says (changed behind the host's back).
 */
export async function recordedBytes(
  record: ObjectRecord,
  read: (key: string) => Promise<Buffer | undefined>,
): Promise<Buffer> {
  const bytes = await blobOf(record, read);
  if (bytes.length !== record.size) throw lengthMismatch(record.size);
  return bytes;
}

/**
 * The bytes of a recorded object as a stream from `read` (`503 unavailable` as above), which fails
 * once they turn out longer or shorter than the record says: the answer they are piped into is cut
 * and its connection closed, never a connection that goes on after more or fewer bytes than its
 * `Content-Length` (its client would read the rest as the next answer, or wait forever).
 */
export async function recordedStream(
  record: ObjectRecord,
  read: (key: string) => Promise<Readable | undefined>,
): Promise<Readable> {
  const source = await blobOf(record, read);
  let seen = 0;
  const checked = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > record.size) done(lengthMismatch(record.size));
      else done(null, chunk);
    },
    flush(done) {
      done(seen === record.size ? null : lengthMismatch(record.size));
    },
  });
  // Either side's failure ends both; the answer's pipeline reports it.
  pipeline(source, checked, () => {});
  return checked;
}

function lengthMismatch(size: number): PlatformError {
  return new PlatformError(
    "unavailable",
    `The object's stored bytes are not the ${size} its record says; retry later.`,
  );
}

/**
 * What a download of `record` sends, and how: a stream of its bytes (a download holds a buffer's
 * worth however slowly its client reads), served by its record's type. An SVG stored before its
 * record kept the rules it passed is read whole and checked again, in its deployment's turn at
 * the checker, then marked so that no later download checks it; while the checker has no room it
 * is served as an attachment unchecked.
 */
export async function objectDownload(source: DownloadSource, record: ObjectRecord): Promise<ObjectDownload> {
  if (
    !markupCheckDue(record.contentType, record.markupRules) ||
    !markupChecker.hasRoom(record.size, record.deployment)
  )
    return {
      body: await recordedStream(record, (key) => source.blobs.stream(key)),
      type: downloadType(record.contentType, record.markupRules),
    };
  const bytes = await source.bytes(record);
  const reason = await markupChecker.scriptReason(bytes, record.deployment).catch(() => "not checked");
  if (reason !== undefined)
    return { body: bytes, type: downloadType(record.contentType, record.markupRules) };
  await source.markChecked(record).catch(() => {});
  return { body: bytes, type: downloadType(record.contentType, MARKUP_RULES_VERSION) };
}
