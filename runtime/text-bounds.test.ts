/**
 * Text built-ins bounded by a long string's length (runtime/text-bounds.ts, date-bounds.ts),
 * installed in this test's own process as the runtime installs them in an isolate.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { boundBuiltins } from "./builtin-bounds.js";
import { boundedDateParse, dateArgument, MAX_DATE_TEXT } from "./date-bounds.js";
import {
  MAX_COLLATED_CHARS,
  MAX_ENCODED_CHARS,
  MAX_SEGMENTED_CHARS,
  MAX_SYMBOL_KEY_CHARS,
} from "./text-bounds.js";

beforeAll(() => boundBuiltins());

const refused = /capsules may run it over at most/;

describe("text built-ins", () => {
  it("refuse a string past their bound", () => {
    const half = "\u1e0b\u0323".repeat(MAX_COLLATED_CHARS / 4 + 1);
    expect(() => `A${half}`.localeCompare(`a${half}`)).toThrow(refused);
    expect(() => new Intl.Collator("en").compare(`A${half}`, `a${half}`)).toThrow(refused);
    expect(() => new Intl.Segmenter("en").segment("a".repeat(MAX_SEGMENTED_CHARS + 1))).toThrow(refused);
    expect(() => encodeURIComponent("a".repeat(MAX_ENCODED_CHARS + 1))).toThrow(refused);
    expect(() => encodeURI("a".repeat(MAX_ENCODED_CHARS + 1))).toThrow(refused);
    expect(() => Symbol.for("a".repeat(MAX_SYMBOL_KEY_CHARS + 1))).toThrow(refused);
  });

  it("answer as before otherwise", () => {
    expect("a".localeCompare("b")).toBe(-1);
    expect("ä".localeCompare("z", "de")).toBe(-1);
    expect("ä".localeCompare("z", "sv")).toBe(1);
    expect(() => String.prototype.localeCompare.call(undefined, "a")).toThrow(TypeError);
    const collator = new Intl.Collator("en", { numeric: true });
    expect(collator.compare).toBe(collator.compare);
    expect([collator.compare.length, collator.compare.name]).toEqual([2, ""]);
    expect(["10", "9", "1"].sort(collator.compare)).toEqual(["1", "9", "10"]);
    expect(collator.compare(undefined as never, "undefined")).toBe(0);
    expect(() => Reflect.get(Intl.Collator.prototype, "compare", {})).toThrow(TypeError);
    expect([...new Intl.Segmenter("en", { granularity: "word" }).segment("a b")].length).toBe(3);
    expect(encodeURIComponent("a b/")).toBe("a%20b%2F");
    expect(encodeURI("a b/")).toBe("a%20b/");
    expect(Symbol.for("app")).toBe(Symbol.for("app"));
    expect(() => Symbol.for(Symbol() as never)).toThrow(TypeError);
  });
});

describe("dates from strings", () => {
  const parse = boundedDateParse(Date.parse);

  it("parse no string past the bound, as an unrecognised one", () => {
    expect(parse(`2020-01-01${" ".repeat(MAX_DATE_TEXT)}`)).toBeNaN();
    expect(dateArgument(`2020-01-01${" ".repeat(MAX_DATE_TEXT)}`)).toBeNaN();
    let reads = 0;
    const shifty = { toString: () => (reads++ ? "x".repeat(1e6) : "2020-01-01") };
    expect(dateArgument(shifty)).toBe("2020-01-01");
    expect(reads).toBe(1);
  });

  it("answer as before otherwise: numbers, dates, valueOf before toString, Symbol.toPrimitive", () => {
    expect(parse("2020-01-01T00:00:00Z")).toBe(Date.UTC(2020, 0, 1));
    expect(parse({ toString: () => "1970-01-01T00:00:00Z" } as never)).toBe(0);
    expect(dateArgument(5)).toBe(5);
    const date = new Date(7);
    expect(dateArgument(date)).toBe(date);
    expect(dateArgument({ valueOf: () => 3, toString: () => "x" })).toBe(3);
    expect(dateArgument({ [Symbol.toPrimitive]: (hint: string) => hint })).toBe("default");
    expect(() => dateArgument({ valueOf: () => ({}), toString: () => ({}) })).toThrow(TypeError);
    expect(() => dateArgument({ [Symbol.toPrimitive]: 5 })).toThrow(TypeError);
  });
});
