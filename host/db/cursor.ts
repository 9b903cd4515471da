import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
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

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error("Cursor key must be 32 bytes");
    this.key = key;
  }

  private static aad(binding: CursorBinding): Buffer {
    return createHash("sha256").update(JSON.stringify(binding)).digest();
  }

  /** Seals `position` (empty for "from the start") for `binding`. */
  encode(position: Buffer, binding: CursorBinding): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(CursorCodec.aad(binding));
    const body = Buffer.concat([cipher.update(position), cipher.final()]);
    return Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64url");
  }

  /** Opens a cursor made by {@link encode} for the same binding, or throws `invalid_cursor`. */
  decode(cursor: string, binding: CursorBinding): Buffer {
    if (typeof cursor !== "string" || cursor.length > 8192) throw invalidCursor();
    const raw = Buffer.from(cursor, "base64url");
    if (raw.length < IV_BYTES + TAG_BYTES) throw invalidCursor();
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(CursorCodec.aad(binding));
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
