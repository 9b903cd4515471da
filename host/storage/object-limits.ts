import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/** Storage limits; tests pass smaller ones. */
export interface StorageLimits {
  fileSize: number;
  perDeveloper: number;
  listing: number;
}

/** The platform's storage limits, read from {@link LIMITS}: per file, per developer, and listing size. */
export const DEFAULT_STORAGE_LIMITS: StorageLimits = {
  fileSize: LIMITS.fileSize,
  perDeveloper: LIMITS.storagePerDeveloper,
  listing: LIMITS.listingSize,
};

/** A byte count as the platform's documented limits spell it (`5 MiB`). */
export function inMebibytes(bytes: number): string {
  return `${bytes / 1024 / 1024} MiB`;
}

/**
 * `413 too_large` for a file over `limit` bytes; the parenthesis names the platform's documented
 * limit even when a host runs with a smaller one. One builder, so the upload route and the store agree.
 */
export function fileTooLarge(limit: number): PlatformError {
  return new PlatformError(
    "too_large",
    `Files are limited to ${limit} bytes (${inMebibytes(LIMITS.fileSize)}).`,
  );
}

const ID = /^[A-Za-z0-9_-]{22}$/;

/**
 * An object's key as the host issues it: its visibility, then the 22 base64url characters of its
 * random id (`private/AbC...`). What an archive may carry, and what `platform storage get` and
 * `delete` accept before they put a key in a URL: a key with `..` segments or escapes took the
 * owner's token to another route (`private/../../../../../deploys/todo` deleted the deployment).
 */
export const OBJECT_KEY = /^(?:public|private)\/[A-Za-z0-9_-]{22}$/;

/** Checks an object id taken from a URL. */
export function checkObjectId(id: string): string {
  if (!ID.test(id)) throw new PlatformError("not_found", "No such object.");
  return id;
}
