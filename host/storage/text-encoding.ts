/**
 * How a browser's parsers would decode a file's text, so the checks read what the browser reads and
 * not what the bytes look like in ASCII: a byte order mark first, then UTF-16 recognised by its zero
 * bytes around a leading `<` (XML's autodetection), then the XML declaration's `encoding`, else UTF-8.
 */

/** The encoding a file's text is decoded with, and how many leading bytes (a byte order mark) to skip. */
export interface TextEncoding {
  label: string;
  skip: number;
}

/** The encoding a byte order mark names, or one guessed from UTF-16's zero bytes around ASCII. */
function encodingByBytes(bytes: Uint8Array): TextEncoding | undefined {
  const [a, b, c] = bytes;
  if (a === 0xef && b === 0xbb && c === 0xbf) return { label: "utf-8", skip: 3 };
  if (a === 0xff && b === 0xfe) return { label: "utf-16le", skip: 2 };
  if (a === 0xfe && b === 0xff) return { label: "utf-16be", skip: 2 };
  if (a !== undefined && a !== 0 && b === 0 && bytes.length > 3) return { label: "utf-16le", skip: 0 };
  if (a === 0 && b !== undefined && b !== 0 && bytes.length > 3) return { label: "utf-16be", skip: 0 };
  return undefined;
}

const XML_DECLARATION_ENCODING = /^\s*<\?xml\s[^>]*?encoding\s*=\s*["']([^"']+)["']/;

/**
 * The encoding to read `bytes` with, or undefined when the file declares one that cannot be decoded
 * here (then the file cannot be checked, and must not be stored as markup).
 */
export function textEncodingOf(bytes: Uint8Array): TextEncoding | undefined {
  const byBytes = encodingByBytes(bytes);
  if (byBytes) return byBytes;
  const declared = XML_DECLARATION_ENCODING.exec(Buffer.from(bytes.subarray(0, 256)).toString("latin1"));
  const label = declared?.[1]?.trim().toLowerCase() ?? "utf-8";
  try {
    return { label: new TextDecoder(label).encoding, skip: 0 };
  } catch {
    return undefined;
  }
}

/** The text of `bytes` (at most `length` bytes of it) decoded as `encoding`, byte order mark removed. */
export function decodeText(bytes: Uint8Array, encoding: TextEncoding, length = bytes.length): string {
  return new TextDecoder(encoding.label).decode(bytes.subarray(encoding.skip, encoding.skip + length));
}
