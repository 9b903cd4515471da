import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeNumber, decodeText, encodeNumber, encodeText, encodeValue } from "./codec.js";

const wellFormed = fc.string({ unit: "grapheme" }).filter((s) => !s.includes("\u0000"));

describe("key codec", () => {
  it("orders numbers numerically, with -0 equal to 0", () => {
    const values = [
      -Infinity,
      -1e300,
      -10,
      -2,
      -0.5,
      -Number.MIN_VALUE,
      0,
      Number.MIN_VALUE,
      0.5,
      2,
      10,
      1e300,
      Infinity,
    ];
    const encoded = values.map(encodeNumber);
    for (let i = 1; i < encoded.length; i++) expect(Buffer.compare(encoded[i - 1]!, encoded[i]!)).toBe(-1);
    expect(encodeNumber(-0).equals(encodeNumber(0))).toBe(true);
  });

  it("round-trips numbers", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), (n) => {
        expect(decodeNumber(encodeNumber(n), 0)).toBe(n === 0 ? 0 : n);
      }),
    );
  });

  it("agrees with numeric order on random pairs", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), fc.double({ noNaN: true }), (a, b) => {
        const cmp = Math.sign(Buffer.compare(encodeNumber(a), encodeNumber(b)));
        expect(cmp).toBe(a < b ? -1 : a > b ? 1 : 0);
      }),
    );
  });

  it("orders strings by UTF-8 bytes and is prefix-free", () => {
    fc.assert(
      fc.property(wellFormed, wellFormed, (a, b) => {
        const cmp = Math.sign(Buffer.compare(encodeText(a), encodeText(b)));
        expect(cmp).toBe(Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
        expect(decodeText(encodeText(a), 0).value).toBe(a);
      }),
    );
    // UTF-16 order would put U+FFFF after the astral character; UTF-8 puts it before.
    expect(Buffer.compare(encodeText("\uffff"), encodeText("😀"))).toBe(-1);
    expect(Buffer.compare(encodeText("a"), encodeText("ab"))).toBe(-1);
  });

  it("escapes NUL bytes so they cannot end a string early", () => {
    const encoded = encodeText("a\u0000b");
    expect(decodeText(encoded, 0).value).toBe("a\u0000b");
    expect(Buffer.compare(encodeText("a"), encoded)).toBe(-1);
  });

  it("orders absent < false < true < numbers < strings", () => {
    const order = [
      encodeValue(undefined),
      encodeValue(false),
      encodeValue(true),
      encodeValue(-5),
      encodeValue(""),
    ];
    for (let i = 1; i < order.length; i++) expect(Buffer.compare(order[i - 1]!, order[i]!)).toBe(-1);
    for (const key of order) expect(key[0] === 0 || key[0] === 0xff).toBe(false);
  });
});
