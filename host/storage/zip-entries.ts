/**
 * What a zip archive is, from the names in its central directory, without unpacking anything.
 * file-type tells a jar, an apk or a browser extension from a plain zip by its entries' names, but
 * it also unpacks `mimetype` and `[Content_Types].xml` whole, on the host's main thread, to tell
 * office documents apart: a 1 MiB upload whose such entry inflated to 1 GB held it 9.5 s and grew
 * the process by 2.6 GB. The names are all the blocked types need.
 */

/** The leading bytes of a zip's first local file header: how a zip begins. */
export const ZIP_LOCAL_HEADER = [0x50, 0x4b, 0x03, 0x04];
const END_OF_DIRECTORY = 0x06054b50;
const DIRECTORY_ENTRY = 0x02014b50;
/** The end-of-directory record's fixed part, and the longest comment that may follow it. */
const END_RECORD_BYTES = 22;
const MOST_COMMENT_BYTES = 0xffff;

/**
 * The entry names of a zip's central directory, in its order, or undefined when it has none that
 * can be read (truncated, ZIP64, or not a zip): then no program could be run from it either.
 */
export function zipEntryNames(bytes: Uint8Array): string[] | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lowest = Math.max(0, bytes.length - END_RECORD_BYTES - MOST_COMMENT_BYTES);
  for (let at = bytes.length - END_RECORD_BYTES; at >= lowest; at--) {
    if (view.getUint32(at, true) !== END_OF_DIRECTORY) continue;
    const count = view.getUint16(at + 10, true);
    const start = view.getUint32(at + 16, true);
    // ZIP64 keeps the real figures elsewhere; an upload is far too small to need it.
    if (count === 0xffff || start === 0xffffffff) return undefined;
    return namesFrom(view, bytes, start, count);
  }
  return undefined;
}

function namesFrom(view: DataView, bytes: Uint8Array, start: number, count: number): string[] | undefined {
  const names: string[] = [];
  let at = start;
  for (let i = 0; i < count; i++) {
    if (at + 46 > bytes.length || view.getUint32(at, true) !== DIRECTORY_ENTRY) return undefined;
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    if (at + 46 + nameLength > bytes.length) return undefined;
    names.push(Buffer.from(bytes.buffer, bytes.byteOffset + at + 46, nameLength).toString("latin1"));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return names;
}

/**
 * The type file-type would give a zip, as its entries' names tell it (file-type 20: the first of
 * these names decides; `mimetype` or `[Content_Types].xml` first makes a document, never a blocked
 * type), read from the central directory, which is what Java and Android read too.
 */
export function zipType(bytes: Uint8Array): { ext: string; mime: string } {
  for (const name of zipEntryNames(bytes) ?? []) {
    if (name === "META-INF/mozilla.rsa") return { ext: "xpi", mime: "application/x-xpinstall" };
    if (name === "META-INF/MANIFEST.MF") return { ext: "jar", mime: "application/java-archive" };
    if (name === "mimetype" || name === "[Content_Types].xml") break;
    if (/classes\d*\.dex/.test(name)) return { ext: "apk", mime: "application/vnd.android.package-archive" };
  }
  return { ext: "zip", mime: "application/zip" };
}
