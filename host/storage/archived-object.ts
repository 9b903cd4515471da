/**
 * A stored object as an export archive carries it (its record without deployment and quota owner),
 * and the check of one read from an archive: nothing in an archive is trusted.
 */
import { printable } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { isBlockedDeclaredType } from "./blocked-types.js";
import { OBJECT_KEY } from "./object-limits.js";
import type { ObjectRecord } from "./object-records.js";
import { contentTypeFault, isUploaderText } from "./stored-text.js";

/** A stored object as an archive carries it: its record without deployment and quota owner. */
export interface ArchivedObject {
  key: string;
  size: number;
  contentType: string;
  uploaderId: string;
  uploaderEmail: string | null;
  uploadedAt: number;
}

/** An archive's fault: `bad_request`, "Invalid archive: ...". */
export function invalidArchive(message: string): PlatformError {
  return new PlatformError("bad_request", `Invalid archive: ${message}`);
}

/** The archived form of `record`. */
export function archivedObject(record: ObjectRecord): ArchivedObject {
  const { key, size, contentType, uploaderId, uploaderEmail, uploadedAt } = record;
  return { key, size, contentType, uploaderId, uploaderEmail, uploadedAt };
}

/** Checks one object record of an archive (`where` names its line). */
export function checkArchivedObject(value: unknown, where: string, fileSize: number): ArchivedObject {
  const o = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  if (typeof o.key !== "string" || !OBJECT_KEY.test(o.key))
    throw invalidArchive(`${where} has no valid object key.`);
  if (typeof o.size !== "number" || !Number.isSafeInteger(o.size) || o.size < 0 || o.size > fileSize)
    throw invalidArchive(`${where} (${o.key}) has an invalid size.`);
  if (typeof o.contentType !== "string")
    throw invalidArchive(`${where} (${o.key}) has an invalid content type.`);
  // Stored before types were checked (or written by hand): kept as plain bytes, not refused, so
  // that every deployment's export imports again.
  const contentType = contentTypeFault(o.contentType) ? "application/octet-stream" : o.contentType;
  if (isBlockedDeclaredType(contentType))
    throw new PlatformError("blocked_type", `Files of type ${contentType} cannot be stored (${o.key}).`);
  if (typeof o.uploaderId !== "string" || o.uploaderId.length === 0)
    throw invalidArchive(`${where} (${o.key}) has no uploader.`);
  if (o.uploaderEmail !== null && typeof o.uploaderEmail !== "string")
    throw invalidArchive(`${where} (${o.key}) has an invalid uploader email.`);
  if (typeof o.uploadedAt !== "number" || !Number.isFinite(o.uploadedAt) || o.uploadedAt < 0)
    throw invalidArchive(`${where} (${o.key}) has an invalid upload time.`);
  return {
    key: o.key,
    size: o.size,
    contentType,
    // Shown to developers as they are: text a terminal would act on is kept escaped, or dropped.
    uploaderId: isUploaderText(o.uploaderId) ? o.uploaderId : printable(o.uploaderId).slice(0, 320),
    uploaderEmail: o.uploaderEmail !== null && isUploaderText(o.uploaderEmail) ? o.uploaderEmail : null,
    uploadedAt: o.uploadedAt,
  };
}
