/** The isolate's body decoders give what Node's Buffer gives the host, byte for byte. */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decodeBase64, decodeUtf8 } from "./body-decoding.js";

/** Bytes that start, continue or break UTF-8 sequences at their edges. */
const EDGES = [
  0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4,
  0xf5, 0xff,
];

describe("decodeUtf8", () => {
  it("replaces invalid sequences as Buffer#toString does (maximal subparts, no BOM stripped)", () => {
    const cases = [
      [0xef, 0xbb, 0xbf, 0x61],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xe0, 0x80, 0x41],
      [0xf0, 0x9f, 0x98],
      [0xf0, 0x9f, 0x98, 0x80, 0xc3],
      [0xc3, 0xa9, 0xe2, 0x82, 0xac],
    ];
    for (const bytes of cases)
      expect(decodeUtf8(Uint8Array.from(bytes))).toBe(Buffer.from(bytes).toString("utf8"));
  });

  it("agrees with Buffer#toString on 20,000 random byte strings weighted to the edges", () => {
    for (let n = 0; n < 20_000; n++) {
      const bytes = randomBytes(n % 41);
      if (n % 2 === 0)
        for (let i = 0; i < bytes.length; i++)
          bytes[i] = EDGES[(bytes[i] as number) % EDGES.length] as number;
      expect(decodeUtf8(bytes)).toBe(bytes.toString("utf8"));
    }
  });

  it("decodes long ASCII runs, mixed text and 1 MiB of random bytes whole", () => {
    const mixed = Buffer.from(`${"a".repeat(70_000)}é${"\u0001".repeat(100)}😀${"b".repeat(64)}`);
    expect(decodeUtf8(mixed)).toBe(mixed.toString("utf8"));
    const random = randomBytes(1024 * 1024);
    expect(decodeUtf8(random)).toBe(random.toString("utf8"));
    expect(decodeUtf8(new Uint8Array(0))).toBe("");
  });
});

describe("decodeBase64", () => {
  it("gives back the bytes Buffer encoded, at every length's padding", () => {
    for (let length = 0; length < 70; length++) {
      const bytes = randomBytes(length);
      expect(Buffer.from(decodeBase64(bytes.toString("base64")))).toEqual(bytes);
    }
    const large = randomBytes(1024 * 1024 + 1);
    expect(Buffer.from(decodeBase64(large.toString("base64"))).equals(large)).toBe(true);
  });
});
