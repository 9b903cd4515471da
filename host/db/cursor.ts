import { createCipheriv, createDecipheriv, createHash, randomFillSync } from "node:crypto";
import { PlatformError } from "../../sdk/values/index.js";

/** Everything a cursor is bound to; a cursor made for one binding is refused for any other. */
export interface CursorBinding {
  deployment: string;
  schemaHash: string;
  handler: string;
  argsHash: string;
  table: string;
  index: string;
  start: string;
  end: string;
  order: "asc" | "desc";
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** IVs drawn per refill of the pool (one `randomFillSync` costs about as much as one cipher). */
const IVS_PER_FILL = 256;
/** Associated data kept per distinct binding; a page's binding repeats for every page of a query. */
const AAD_CACHE_SIZE = 1024;
/** Cursors kept for the page ends sealed last (a busy list's first page ends at the same row for every reader). */
const SEALED_CACHE_SIZE = 1024;
/** Positions longer than this (bytes) are sealed afresh every time rather than kept. */
const SEALED_CACHE_MAX_POSITION = 512;

/** Adds `key` to a map kept at most `size` entries long, dropping the oldest. */
export function remember<V>(map: Map<string, V>, key: string, value: V, size: number): void {
  if (map.size >= size) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

/**
 * Fresh random IVs, drawn from a pool filled by the CSPRNG in one call. Every IV is used once:
 * AES-GCM must never see an IV twice under one key, and 96 random bits make that as unlikely as
 * one `randomBytes(12)` per cursor did.
 */
class IvPool {
  private pool = Buffer.alloc(0);
  private offset = 0;

  next(): Buffer {
    if (this.offset === this.pool.length) {
      // A new buffer each fill: IVs handed out earlier are views of the old one.
      this.pool = randomFillSync(Buffer.allocUnsafe(IV_BYTES * IVS_PER_FILL));
      this.offset = 0;
    }
    const iv = this.pool.subarray(this.offset, this.offset + IV_BYTES);
    this.offset += IV_BYTES;
    return iv;
  }
}

function invalidCursor(cause?: unknown): PlatformError {
  return new PlatformError(
    "invalid_cursor",
    "Invalid pagination cursor: it was made for a different query, arguments, deployment or schema, or it was altered. Start again with cursor: null.",
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Encrypts and authenticates pagination positions (AES-256-GCM with a host key). The position is
 * the last index key returned, which contains row values: encryption keeps them from clients, and
 * the associated data binds the cursor to its query so it is useless anywhere else.
 */
export class CursorCodec {
  private readonly key: Buffer;
  private readonly ivs = new IvPool();
  /** SHA-256 of each recent binding's JSON, oldest first (a Map keeps insertion order). */
  private readonly aads = new Map<string, Buffer>();
  /**
   * Recent cursors by binding and position. Sealing the same position for the same binding again
   * would only differ in its IV; handing out the cursor made before saves a cipher per page.
   */
  private readonly sealed = new Map<string, string>();

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error("Cursor key must be 32 bytes");
    this.key = key;
  }

  /** The associated data of a binding, by its JSON. */
  private aad(json: string): Buffer {
    let digest = this.aads.get(json);
    if (!digest) {
      digest = createHash("sha256").update(json).digest();
      remember(this.aads, json, digest, AAD_CACHE_SIZE);
    }
    return digest;
  }

  /** Seals `position` (empty for "from the start") for `binding`. */
  encode(position: Buffer, binding: CursorBinding): string {
    const json = JSON.stringify(binding);
    const kept =
      position.length <= SEALED_CACHE_MAX_POSITION ? `${json}\n${position.toString("latin1")}` : undefined;
    const known = kept === undefined ? undefined : this.sealed.get(kept);
    if (known !== undefined) return known;
    const iv = this.ivs.next();
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(this.aad(json));
    const body = Buffer.concat([cipher.update(position), cipher.final()]);
    const cursor = Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url");
    if (kept !== undefined) remember(this.sealed, kept, cursor, SEALED_CACHE_SIZE);
    return cursor;
  }

  /** Opens a cursor made by {@link encode} for the same binding, or throws `invalid_cursor`. */
  decode(cursor: string, binding: CursorBinding): Buffer {
    if (typeof cursor !== "string" || cursor.length > 8192) throw invalidCursor();
    const raw = Buffer.from(cursor, "base64url");
    if (raw.length < IV_BYTES + TAG_BYTES) throw invalidCursor();
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(this.aad(JSON.stringify(binding)));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
        decipher.final(),
      ]);
    } catch (error) {
      throw invalidCursor(error);
    }
  }
}

/** A stable hash of a handler's JSON arguments, for cursor bindings. */
export function hashArgs(argsJson: string): string {
  return createHash("sha256").update(argsJson).digest("base64url");
}
