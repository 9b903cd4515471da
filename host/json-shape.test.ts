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
