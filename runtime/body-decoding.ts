/**
 * Decoders for an endpoint's request body inside the isolate, which has neither `atob`, `Buffer`
 * nor `TextDecoder`. The host hands the body in as base64 only: decoding it here charges the
 * tenant's CPU, not the host's main thread (a body of control characters as JSON text is six
 * times its size).
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Each base64 digit's value by character code; 255 for characters that are not digits. */
const DIGITS = new Uint8Array(128).fill(255);
for (let i = 0; i < ALPHABET.length; i++) DIGITS[ALPHABET.charCodeAt(i)] = i;

/** Decodes base64; characters that are not base64 digits (padding, line breaks) are skipped. */
export function decodeBase64(text: string): Uint8Array {
  const out = new Uint8Array(Math.floor((text.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let at = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const digit = code < 128 ? (DIGITS[code] as number) : 255;
    if (digit === 255) continue;
    value = ((value << 6) | digit) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[at++] = (value >> bits) & 0xff;
    }
  }
  return out.subarray(0, at);
}

/** Code units turned into a string at a time (`String.fromCharCode` takes them as arguments). */
const CHUNK = 8192;
const REPLACEMENT = 0xfffd;
/** Runs of ASCII at least this long are turned into text directly. */
const ASCII_RUN = 64;

/**
 * Decodes UTF-8 as Node's `Buffer#toString("utf8")` and the WHATWG Encoding standard do: each
 * maximal invalid subpart becomes one U+FFFD, and a byte order mark is kept.
 */
export function decodeUtf8(bytes: Uint8Array): string {
  const parts: string[] = [];
  const units: number[] = [];
  const emit = (codePoint: number): void => {
    if (codePoint > 0xffff) {
      const above = codePoint - 0x10000;
      units.push(0xd800 | (above >> 10), 0xdc00 | (above & 0x3ff));
    } else units.push(codePoint);
    if (units.length >= CHUNK) flush();
  };
  const flush = (): void => {
    if (units.length > 0) parts.push(String.fromCharCode(...units));
    units.length = 0;
  };
  let needed = 0;
  let seen = 0;
  let codePoint = 0;
  let lower = 0x80;
  let upper = 0xbf;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    if (needed === 0) {
      if (byte <= 0x7f) {
        // A long run of ASCII (most bodies are nothing else) becomes text a chunk at a time.
        let end = i + 1;
        while (end < bytes.length && (bytes[end] as number) <= 0x7f) end++;
        if (end - i < ASCII_RUN) {
          for (; i < end; i++) emit(bytes[i] as number);
        } else {
          flush();
          for (let at = i; at < end; at += CHUNK)
            parts.push(
              String.fromCharCode.apply(null, bytes.subarray(at, Math.min(end, at + CHUNK)) as never),
            );
          i = end;
        }
        i--;
      } else if (byte >= 0xc2 && byte <= 0xdf) {
        needed = 1;
        codePoint = byte & 0x1f;
      } else if (byte >= 0xe0 && byte <= 0xef) {
        if (byte === 0xe0) lower = 0xa0;
        if (byte === 0xed) upper = 0x9f;
        needed = 2;
        codePoint = byte & 0x0f;
      } else if (byte >= 0xf0 && byte <= 0xf4) {
        if (byte === 0xf0) lower = 0x90;
        if (byte === 0xf4) upper = 0x8f;
        needed = 3;
        codePoint = byte & 0x07;
      } else emit(REPLACEMENT);
      continue;
    }
    if (byte < lower || byte > upper) {
      // The sequence ends before this byte, which starts afresh.
      needed = seen = codePoint = 0;
      lower = 0x80;
      upper = 0xbf;
      emit(REPLACEMENT);
      i--;
      continue;
    }
    lower = 0x80;
    upper = 0xbf;
    codePoint = (codePoint << 6) | (byte & 0x3f);
    if (++seen === needed) {
      emit(codePoint);
      needed = seen = codePoint = 0;
    }
  }
  if (needed !== 0) emit(REPLACEMENT);
  flush();
  return parts.join("");
}
