import { createHash } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { executableReason } from "../storage/index.js";
import { decodedSize, isStrictBase64 } from "./base64.js";
import { isReservedPath } from "./declaration.js";

/**
 * One file of a deploy's web client as the deploy body carries it: its path in `client/` and its
 * bytes in base64, or those bytes once the host decoded them off its main thread (json-off-thread.ts).
 */
export interface ClientFileInput {
  path: string;
  data: string | Uint8Array;
}

/** A checked client file: its path, bytes and SHA-256 (hex), which names it in storage. */
export interface ClientFile {
  path: string;
  bytes: Buffer;
  hash: string;
}

const MiB = 1024 * 1024;
// Control characters, `\` (a separator on Windows and to some URL parsers), and `?`/`#`, which a
// URL path can never carry unescaped: a file named with them could not be asked for as written.
const FORBIDDEN_IN_NAME = /[\\?#]/;

/** Whether `name` holds a control character (C0 or DEL). */
function hasControlCharacter(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

function tooLarge(message: string): PlatformError {
  return new PlatformError("too_large", message);
}

/**
 * Checks a client file's path: relative, `/`-separated names of 1-255 characters (no `.` or `..`,
 * no empty names, no control characters, `\`, `?` or `#`), at most 1024 characters, and outside
 * the platform's own routes (a file there could never be reached). Files are looked up by exact
 * path, never on a disk, so a request can only reach a path that passed this check.
 */
export function checkClientPath(path: unknown): string {
  const names = typeof path === "string" && path.length <= 1024 ? path.split("/") : [];
  const plain =
    names.length > 0 &&
    names.every(
      (name) =>
        name.length > 0 &&
        name.length <= 255 &&
        name !== "." &&
        name !== ".." &&
        !FORBIDDEN_IN_NAME.test(name) &&
        !hasControlCharacter(name),
    );
  if (!plain)
    throw new PlatformError(
      "bad_request",
      `Client file path ${JSON.stringify(path)} must be a relative path of plain names separated by "/" (no "." or ".." names, no "\\", "?", "#" or control characters; at most 1024 characters).`,
    );
  if (isReservedPath(`/${path}`))
    throw new PlatformError(
      "bad_request",
      `Client file ${path} is under a path reserved for the platform (/api/*, /storage*, /__platform*), so it could never be served; move it.`,
    );
  return path as string;
}

/**
 * Checks a deploy's `client` field: a list of at most `LIMITS.clientFiles` files with distinct
 * checked paths (at most `LIMITS.clientPathChars` characters together) and base64 bytes, each at
 * most `LIMITS.clientFileBytes` and together at most `LIMITS.clientBytes` (`413 too_large` naming
 * the limit). A file that is a native executable or
 * installer is refused (`415 blocked_type`); HTML, JavaScript, SVG and WebAssembly are the app
 * itself and are accepted (docs/security.md, "Deployed web clients").
 */
export async function checkClientFiles(input: unknown): Promise<ClientFile[]> {
  if (!Array.isArray(input))
    throw new PlatformError("bad_request", 'A deploy\'s client is a list of { "path", "data" (base64) }.');
  if (input.length > LIMITS.clientFiles)
    throw tooLarge(
      `The client has ${input.length} files; a deploy takes at most ${LIMITS.clientFiles} (LIMITS.clientFiles).`,
    );
  const seen = new Set<string>();
  const files: ClientFile[] = [];
  let total = 0;
  let pathChars = 0;
  for (const item of input as unknown[]) {
    const { path: rawPath, data } = (item ?? {}) as Partial<ClientFileInput>;
    const path = checkClientPath(rawPath);
    if (seen.has(path)) throw new PlatformError("bad_request", `Client file ${path} is listed twice.`);
    seen.add(path);
    pathChars += path.length;
    if (pathChars > LIMITS.clientPathChars)
      throw tooLarge(
        `The client's file paths are more than ${LIMITS.clientPathChars} characters together (LIMITS.clientPathChars): every host keeps a version's paths in memory. Use shorter paths or fewer files.`,
      );
    const decoded = data instanceof Uint8Array;
    if (!decoded && (typeof data !== "string" || !isStrictBase64(data)))
      throw new PlatformError("bad_request", `Client file ${path} needs its bytes as base64 in "data".`);
    const size = decoded ? data.byteLength : decodedSize(data as string);
    if (size > LIMITS.clientFileBytes)
      throw tooLarge(
        `Client file ${path} is ${size} bytes; one file may be at most ${LIMITS.clientFileBytes} bytes (${LIMITS.clientFileBytes / MiB} MiB, LIMITS.clientFileBytes).`,
      );
    total += size;
    if (total > LIMITS.clientBytes)
      throw tooLarge(
        `The client files are more than ${LIMITS.clientBytes} bytes together (${LIMITS.clientBytes / MiB} MiB, LIMITS.clientBytes).`,
      );
    const bytes = decoded
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data as string, "base64");
    const executable = await executableReason(bytes);
    if (executable)
      throw new PlatformError("blocked_type", `Client file ${path} cannot be served: ${executable}.`);
    files.push({ path, bytes, hash: createHash("sha256").update(bytes).digest("hex") });
    // A file's checks take about 3 ms at most: the host's other requests go between files.
    await nextTurn();
  }
  return files;
}
