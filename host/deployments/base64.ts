const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Whether `text` is base64 as a deploy body carries a client file: the standard alphabet, padded
 * to a multiple of 4 (Node's decoder takes almost anything, skipping what it does not know).
 */
export function isStrictBase64(text: string): boolean {
  return text.length % 4 === 0 && BASE64.test(text);
}

/** Bytes that base64 `text` decodes to, without decoding it (so an oversized file costs no memory). */
export function decodedSize(text: string): number {
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return (text.length / 4) * 3 - padding;
}
