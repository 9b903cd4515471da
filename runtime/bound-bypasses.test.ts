/**
 * Ways around the built-in bounds a review of them found (docs/security.md, "Isolates"), each
 * closed, and the bounds' answers for ordinary code beside them. test/sandbox.test.ts (23d) runs
 * the runtime's own strictness inside a real isolate.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { boundBuiltins, MAX_WALKED_ELEMENTS } from "./builtin-bounds.js";
import { MAX_LOCALE_TAG_CHARS } from "./locale-bounds.js";

const nativeSort = Array.prototype.sort;
const nativeIndexOf = Array.prototype.indexOf;
const nativeLastIndexOf = Array.prototype.lastIndexOf;
const nativeIncludes = Array.prototype.includes;

beforeAll(() => boundBuiltins());

const refused = /capsules may (walk|pass) at most/;

describe("what a bound reads", () => {
  it("a Math.min or Number capsule code replaced does not answer for a length", () => {
    const { min } = Math;
    let outcome: unknown;
    Math.min = (() => ({
      c: 0,
      valueOf() {
        return this.c++ ? 2 ** 40 : 0;
      },
    })) as never;
    try {
      outcome = Array.prototype.fill.call({ length: 2 ** 40 }, 1);
    } catch (caught) {
      outcome = caught;
    } finally {
      Math.min = min;
    }
    expect(String(outcome)).toMatch(refused);
  });

  it("fill and other writes through the fixed-length view reach the object", () => {
    expect(Array.prototype.fill.call({ length: 3 }, 1)).toEqual({ 0: 1, 1: 1, 2: 1, length: 3 });
    expect([...(Array.prototype.fill.call(new Uint8Array(3), 7) as unknown as Uint8Array)]).toEqual([
      7, 7, 7,
    ]);
    const like = { length: 3, 0: "a", 2: "c" };
    expect(Array.prototype.reverse.call(like)).toEqual({ length: 3, 0: "c", 2: "a" });
    expect(() => Array.prototype.fill.call({ length: MAX_WALKED_ELEMENTS + 1 }, 1)).toThrow(refused);
  });

  it("TypedArray.from reads a typed array's iterator once, and its length never from its own property", () => {
    const typed = new Uint8Array(1);
    Object.defineProperty(typed, "length", { value: 2 ** 32 });
    (typed as unknown as Record<symbol, unknown>)[Symbol.iterator] = undefined;
    expect(() => Uint8Array.from(typed)).toThrow(refused);
    expect([...Float64Array.from(new Uint8Array([1, 2]))]).toEqual([1, 2]);
    expect([...Uint8Array.from("12")]).toEqual([1, 2]);
    class Wide extends Float32Array {}
    expect(Wide.from([1.5], (v) => v * 2)).toBeInstanceOf(Wide);
    expect([...Wide.from([1.5], (v) => v * 2)]).toEqual([3]);
    expect(() => Uint8Array.from([1], 5 as never)).toThrow(TypeError);
  });

  it("typed arrays convert their values one by one in JavaScript, as the built-in would", () => {
    expect([...new Float64Array([" 1", "2", { valueOf: () => 7 }] as never)]).toEqual([1, 2, 7]);
    expect([...new BigInt64Array(["1", 2n, true] as never)]).toEqual([1n, 2n, 1n]);
    expect(() => new BigInt64Array([1] as never)).toThrow(TypeError);
    expect([...new Uint8ClampedArray([300, -5, 1.5])]).toEqual([255, 0, 2]);
    const target = new Int16Array(3);
    target.set(["4", 5] as never, 1);
    expect([...target]).toEqual([0, 4, 5]);
    expect(() => target.set([1, 2, 3], 1)).toThrow(RangeError);
    // An array-like reaches Array.from's constructor as its length, as before.
    function Counted(this: { n?: number }, n: number) {
      this.n = n;
    }
    expect(Reflect.apply(Array.from, Counted, [{ length: 2 }])).toMatchObject({ n: 2 });
  });
});

describe("locale tags", () => {
  it("refuse one past the bound, wherever it is handed over", () => {
    const long = `en-${Array.from({ length: 60 }, (_, i) => `v${String(i).padStart(5, "0")}`).join("-")}`;
    expect(long.length).toBeGreaterThan(MAX_LOCALE_TAG_CHARS);
    const tooLong = /A language tag of \d+ characters: capsules may pass at most 256/;
    expect(() => Intl.getCanonicalLocales(long)).toThrow(tooLong);
    expect(() => Intl.getCanonicalLocales(["en", long])).toThrow(tooLong);
    expect(() => (1).toLocaleString(long)).toThrow(tooLong);
    expect(() => new Intl.NumberFormat([{ toString: () => long }] as never)).toThrow(tooLong);
    expect(() => new Intl.Locale(long)).toThrow(tooLong);
    expect(() => new Intl.DisplayNames("en", { type: "language" }).of(long)).toThrow(tooLong);
  });

  it("take ordinary tags, lists and locales as before", () => {
    expect(Intl.getCanonicalLocales(["EN-us", new Intl.Locale("de")] as never)).toEqual(["en-US", "de"]);
    expect(new Intl.Locale("en-US").language).toBe("en");
    expect(new Intl.Locale(new Intl.Locale("fr")).baseName).toBe("fr");
    expect(new Intl.DisplayNames("en", { type: "language" }).of("de")).toBe("German");
    expect(() => Intl.getCanonicalLocales([null] as never)).toThrow(TypeError);
  });
});

describe("long strings in short walks", () => {
  const a = "a".repeat(20000);
  const b = `${"a".repeat(19999)}b`;
  it("includes, indexOf and lastIndexOf of a long string answer as the built-ins", () => {
    const list: unknown[] = [a, b, a];
    const holey: unknown[] = [];
    holey[1] = a;
    const calls: [unknown[], string, unknown[]][] = [
      [list, "indexOf", [a]],
      [list, "indexOf", [a, 1]],
      [list, "indexOf", [a, -1]],
      [list, "indexOf", [a, Infinity]],
      [list, "lastIndexOf", [a]],
      [list, "lastIndexOf", [a, 1]],
      [list, "lastIndexOf", [a, -2]],
      [list, "lastIndexOf", [a, -Infinity]],
      [list, "includes", [b]],
      [list, "includes", [b, 2]],
      [holey, "indexOf", [a]],
      [holey, "includes", [a, "1"]],
    ];
    const natives: Record<string, unknown> = {
      indexOf: nativeIndexOf,
      lastIndexOf: nativeLastIndexOf,
      includes: nativeIncludes,
    };
    for (const [array, name, args] of calls)
      expect(Reflect.apply((array as never)[name], array, args), `${name}(${args.slice(1)})`).toBe(
        Reflect.apply(natives[name] as never, array, args),
      );
  });

  it("a short array's default sort of long strings or objects orders as the built-in", () => {
    const values: unknown[] = [b, { toString: () => a }, "z", 3, undefined, a.slice(0, 5000)];
    const expected = Reflect.apply(nativeSort, values.slice(), []) as unknown[];
    expect(values.slice().sort()).toEqual(expected);
  });

  it("built-ins converting every argument answer as before, long lists converted in JavaScript", () => {
    expect(Math.max(1, "7" as never, { valueOf: () => 3 } as never, -1, 2)).toBe(7);
    expect(Math.min(...[" 5", "2", 9, 4, 8].map((v) => v as never))).toBe(2);
    expect(Math.hypot(3, 4, 0, 0, 0)).toBe(5);
    expect(String.fromCharCode(72, 105, 33, 0x10048, "65" as never)).toBe("Hi!HA");
    expect(String.fromCodePoint(0x1f600, 65, 66, 67, 68)).toBe("😀ABCD");
    expect(() => String.fromCodePoint(1.5, 1, 2, 3, 4)).toThrow(RangeError);
    expect(() => Math.max(1n as never, 1, 2, 3, 4)).toThrow(TypeError);
    expect([...Uint8Array.of(1, 2, 3, 4, 5, 300)]).toEqual([1, 2, 3, 4, 5, 44]);
    expect([...BigInt64Array.of(1n, 2n, 3n, 4n, 5n)]).toEqual([1n, 2n, 3n, 4n, 5n]);
    class Small extends Int8Array {}
    expect(Small.of(1, 2, 3, 4, 5)).toBeInstanceOf(Small);
  });

  it("JSON.parse calls a reviver as before", () => {
    expect(JSON.parse('{"a":[1,2]}', (key, value) => (key === "0" ? 10 : value))).toEqual({ a: [10, 2] });
    expect(JSON.parse("[1]")).toEqual([1]);
    expect(() => JSON.parse("{")).toThrow(SyntaxError);
  });
});
