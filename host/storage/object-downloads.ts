import type { Readable } from "node:stream";
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

/**
 * The bytes of a recorded object, as `read` gives them (whole, or as a stream): `503 unavailable`
 * when the blob store fails or they are missing.
 */
export async function recordedBlob<T>(
  record: ObjectRecord,
  read: (key: string) => Promise<T | undefined>,
): Promise<T> {
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
      body: await recordedBlob(record, (key) => source.blobs.stream(key)),
      type: downloadType(record.contentType, record.markupRules),
    };
  const bytes = await source.bytes(record);
  const reason = await markupChecker.scriptReason(bytes, record.deployment).catch(() => "not checked");
  if (reason !== undefined)
    return { body: bytes, type: downloadType(record.contentType, record.markupRules) };
  await source.markChecked(record).catch(() => {});
  return { body: bytes, type: downloadType(record.contentType, MARKUP_RULES_VERSION) };
}
