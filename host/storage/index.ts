/** `host/storage`: blob stores, the rules of object storage, and what may be stored and served inline. Knows nothing of Koa. */

export { type ArchivedObject, archivedObject, checkArchivedObject } from "./archived-object.js";
export type { BlobHold } from "./blob-deletions.js";
export { type BlobStore, checkBlobKey } from "./blob-store.js";
export { blockedContentReason, executableReason, isBlockedDeclaredType } from "./blocked-types.js";
export { downloadType } from "./download-type.js";
export { FsBlobStore } from "./fs-blob-store.js";
export { MemoryBlobStore } from "./memory-blob-store.js";
export {
  checkObjectId,
  DEFAULT_STORAGE_LIMITS,
  fileTooLarge,
  OBJECT_KEY,
  type StorageLimits,
} from "./object-limits.js";
export {
  blobKeyOf,
  type ObjectRecord,
  objectRecordPages,
  type StorageHolder,
  type StorageScope,
  type Visibility,
} from "./object-records.js";
export { ObjectTransfer } from "./object-transfer.js";
export { ObjectService } from "./objects.js";
export { S3BlobStore, type S3Settings } from "./s3-blob-store.js";
