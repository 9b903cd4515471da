import { describe, expect, it } from "vitest";
import { containersMoreThan, membersMoreThan } from "./json-shape.js";

describe("counting the members of JSON before parsing it", () => {
  it("counts the colons between keys and values, not those in strings", () => {
    expect(membersMoreThan('{"a":1,"b":{"c":2}}', 2)).toBe(true);
    expect(membersMoreThan('{"a":1,"b":{"c":2}}', 3)).toBe(false);
    // Colons and quotes inside strings, escaped quotes and backslash runs before a closing quote.
    const text = JSON.stringify({ "a:b": "https://x:1", 'q"u:o"te': 'end\\":', "\\": "\\\\:" });
    expect(membersMoreThan(text, 3)).toBe(false);
    expect(membersMoreThan(text, 2)).toBe(true);
    expect(membersMoreThan(JSON.stringify(["x:y".repeat(1000)]), 0)).toBe(false);
  });

  it("stops at the limit, and leaves malformed text to the parser", () => {
    expect(membersMoreThan(`{${Array.from({ length: 10 }, (_, i) => `"k${i}":1`).join(",")}}`, 9)).toBe(true);
    expect(membersMoreThan('{"open": "never closed', 5)).toBe(false);
    expect(membersMoreThan("", 0)).toBe(false);
  });
});

describe("counting the objects and arrays of JSON outside its strings", () => {
  it("counts brackets that open a container, not those in strings", () => {
    expect(containersMoreThan(JSON.stringify({ text: "[{[{]}]}", "{": "[" }), 1)).toBe(false);
    expect(containersMoreThan('{"a":[1]}', 1)).toBe(true);
    expect(containersMoreThan(`[${"{},".repeat(1000)}{}]`, 1)).toBe(true);
    expect(containersMoreThan(JSON.stringify({ q: 'a\\"{' }), 1)).toBe(false);
  });
});

describe("reading strings with escapes", () => {
  it("agrees with parsing on random JSON of keys, quotes, backslashes, colons and brackets", () => {
    const pieces = ['"', "\\", ":", "{", "[", "a", "é", "\\\\", '\\"'];
    const text = (length: number) =>
      Array.from({ length }, () => pieces[Math.floor(Math.random() * pieces.length)]).join("");
    for (let n = 0; n < 3000; n++) {
      const value = Object.fromEntries(
        Array.from({ length: n % 7 }, (_, i) => [
          text(i * 2),
          n % 2 ? [text(5), { [text(3)]: text(4) }] : text(9),
        ]),
      );
      const json = JSON.stringify(value);
      let members = 0;
      let containers = 0;
      JSON.parse(json, function (this: unknown, _key, inner) {
        if (inner !== null && typeof inner === "object") containers++;
        if (inner !== null && typeof inner === "object" && !Array.isArray(inner))
          members += Object.keys(inner).length;
        return inner;
      });
      expect(membersMoreThan(json, members), json).toBe(false);
      expect(membersMoreThan(json, members - 1), json).toBe(members > 0);
      expect(containersMoreThan(json, containers), json).toBe(false);
      expect(containersMoreThan(json, containers - 1), json).toBe(true);
    }
  });

  it("reads a string of 4 million escaped quotes once (it went quote by quote: 44 ms)", () => {
    const json = JSON.stringify({ a: '"'.repeat(4_000_000), b: "x:y" });
    expect(membersMoreThan(json, 2)).toBe(false);
    expect(membersMoreThan(json, 1)).toBe(true);
  });
});
