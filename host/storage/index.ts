/** `host/storage`: blob stores and the rules of object storage. Knows nothing of Koa. */
export { type BlobStore, checkBlobKey } from "./blob-store.js";
export {
  BLOCKED_DECLARED_TYPES,
  baseMimeType,
  blockedContentReason,
  isBlockedDeclaredType,
  mustDownloadAsAttachment,
} from "./blocked-types.js";
export { FsBlobStore } from "./fs-blob-store.js";
export { MemoryBlobStore } from "./memory-blob-store.js";
export {
  checkObjectId,
  DEFAULT_STORAGE_LIMITS,
  fileTooLarge,
  type ObjectRecord,
  ObjectService,
  type StorageLimits,
  type Visibility,
} from "./objects.js";
export { S3BlobStore, type S3Settings } from "./s3-blob-store.js";
