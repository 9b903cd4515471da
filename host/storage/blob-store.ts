import type { Readable } from "node:stream";
import { PlatformError } from "../../sdk/values/index.js";

/**
 * Where object bytes live. Keys are paths of safe segments (`<deployment>/<public|private>/<id>`);
 * anything else (`..`, empty segments, odd characters) is refused, so no key can reach outside the
 * store or another deployment's objects.
 */
export interface BlobStore {
  /** Stores `data` under `key` atomically: afterwards the key holds all of it, or (after a crash) nothing. */
  put(key: string, data: Uint8Array): Promise<void>;
  /** The bytes under `key`, or undefined. */
  get(key: string): Promise<Buffer | undefined>;
  /**
   * The bytes under `key` as a stream, or undefined: a download sends them as its client reads
   * them, holding a buffer's worth at a time however large the object or slow the client.
   */
  stream(key: string): Promise<Readable | undefined>;
  /** Removes `key`; removing a missing key is fine (deletes are idempotent). */
  delete(key: string): Promise<void>;
  /** Every key under `prefix` (for repair and tests). */
  list(prefix: string): Promise<string[]>;
  /**
   * Resolves once the backend answers (`GET /readyz`), reading no blob: any key a probe could read
   * is one a deployment could also own (a deployment named like the key made every probe fail).
   * `signal` gives up the check.
   */
  ready(signal: AbortSignal): Promise<void>;
}

const SEGMENT = /^[A-Za-z0-9_-]{1,128}$/;

/** Checks a blob key: 1-8 segments of letters, digits, `_` and `-`, joined by `/`. */
export function checkBlobKey(key: string): string {
  const segments = typeof key === "string" ? key.split("/") : [];
  if (segments.length === 0 || segments.length > 8 || !segments.every((segment) => SEGMENT.test(segment))) {
    throw new PlatformError("bad_request", "Invalid object key.");
  }
  return key;
}
