/**
 * The order-preserving, prefix-free key codec of docs/architecture.md. Comparing two encoded keys
 * with `Buffer.compare` gives the documented index order (docs/capsules.md "Indexes"): absent < false < true; strings by UTF-8 bytes;
 * numbers by value with -0 == 0. Tag bytes are never 0x00 or 0xFF, so `P + 0xFF` bounds every key
 * that starts with `P`.
 */
import type { FieldValue } from "../../sdk/values/index.js";

export const TAG_ABSENT = 0x01;
export const TAG_FALSE = 0x02;
export const TAG_TRUE = 0x03;
export const TAG_NUMBER = 0x04;
export const TAG_STRING = 0x05;
export const TAG_ID = 0x06;

/** The byte after every tag: appended to a prefix it bounds all keys starting with the prefix. */
export const HIGH = 0xff;

const ABSENT = Buffer.from([TAG_ABSENT]);
const FALSE = Buffer.from([TAG_FALSE]);
const TRUE = Buffer.from([TAG_TRUE]);

/** Encodes a float64 so that byte order equals numeric order (-0 normalised to 0). */
export function encodeNumber(value: number): Buffer {
  const out = Buffer.allocUnsafe(9);
  out[0] = TAG_NUMBER;
  out.writeDoubleBE(value === 0 ? 0 : value, 1);
  if ((out[1] as number) & 0x80) {
    for (let i = 1; i < 9; i++) out[i] = ~(out[i] as number) & 0xff;
  } else {
    out[1] = (out[1] as number) | 0x80;
  }
  return out;
}

/** Encodes a string under `tag`: UTF-8 with each 0x00 written 0x00 0xFF, then 0x00 0x01. */
export function encodeText(value: string, tag: number = TAG_STRING): Buffer {
  const utf8 = Buffer.from(value, "utf8");
  let zeros = 0;
  for (const byte of utf8) if (byte === 0) zeros++;
  const out = Buffer.allocUnsafe(utf8.length + zeros + 3);
  out[0] = tag;
  let at = 1;
  if (zeros === 0) {
    utf8.copy(out, 1);
    at += utf8.length;
  } else {
    for (const byte of utf8) {
      out[at++] = byte;
      if (byte === 0) out[at++] = HIGH;
    }
  }
  out[at++] = 0x00;
  out[at] = 0x01;
  return out;
}

/** Encodes one index field value; `undefined` (and `null`) encode as absent. */
export function encodeValue(value: FieldValue | null | undefined, isId = false): Buffer {
  if (value === undefined || value === null) return ABSENT;
  switch (typeof value) {
    case "boolean":
      return value ? TRUE : FALSE;
    case "number":
      return encodeNumber(value);
    case "string":
      return encodeText(value, isId ? TAG_ID : TAG_STRING);
  }
}

/** Decodes a number encoded by {@link encodeNumber} at `offset` (the tag byte). */
export function decodeNumber(key: Buffer, offset: number): number {
  const bytes = Buffer.from(key.subarray(offset + 1, offset + 9));
  if ((bytes[0] as number) & 0x80) {
    bytes[0] = (bytes[0] as number) & 0x7f;
  } else {
    for (let i = 0; i < 8; i++) bytes[i] = ~(bytes[i] as number) & 0xff;
  }
  return bytes.readDoubleBE(0);
}

/** Decodes the text at `offset` (the tag byte); returns the string and the offset after it. */
export function decodeText(key: Buffer, offset: number): { value: string; end: number } {
  const bytes: number[] = [];
  let at = offset + 1;
  for (;;) {
    const byte = key[at];
    if (byte === undefined) throw new Error("Corrupt key: unterminated string");
    if (byte === 0) {
      if (key[at + 1] === HIGH) {
        bytes.push(0);
        at += 2;
        continue;
      }
      return { value: Buffer.from(bytes).toString("utf8"), end: at + 2 };
    }
    bytes.push(byte);
    at++;
  }
}

/** A copy of `prefix` followed by 0xFF: the exclusive upper bound of every key under `prefix`. */
export function afterPrefix(prefix: Buffer): Buffer {
  const out = Buffer.allocUnsafe(prefix.length + 1);
  prefix.copy(out, 0);
  out[prefix.length] = HIGH;
  return out;
}
