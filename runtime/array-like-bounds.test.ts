/**
 * The bounds on built-ins that walk an array-like, a locale list or a backward search in C++
 * (runtime/array-likes.ts, typed-array-bounds.ts, call-bounds.ts, locale-bounds.ts and
 * string-bounds.ts), installed in this test's own process as the runtime installs them in an
 * isolate. test/sandbox.test.ts (23d) runs the one-liners that held a thread for seconds inside
 * real isolates.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { boundBuiltins, MAX_ARGUMENTS, MAX_LOCALES, MAX_WALKED_ELEMENTS } from "./builtin-bounds.js";

// Captured before the bounds are installed, to compare with.
const nativeLastIndexOf = String.prototype.lastIndexOf;

beforeAll(() => boundBuiltins());

const refused = /capsules may walk at most/;
const huge = { length: 2 ** 32 - 1 };

describe("array-likes handed to built-ins", () => {
  it("refuse a long one: typed arrays, Array.from, apply, Reflect, String.raw and Intl's locale lists", () => {
    expect(() => new Uint8Array(huge)).toThrow(refused);
    expect(() => Float64Array.from(huge)).toThrow(refused);
    expect(() => new Uint8Array(8).set(huge)).toThrow(refused);
    const holes: unknown[] = [];
    holes[MAX_WALKED_ELEMENTS + 1] = 0;
    expect(() => new Uint8Array(8).set(holes as number[])).toThrow(refused);
    expect(() => Array.from(huge)).toThrow(refused);
    expect(() => Math.max.apply(null, { length: MAX_ARGUMENTS + 1 } as never)).toThrow(refused);
    expect(() => Reflect.apply(Math.max, null, huge as never)).toThrow(refused);
    expect(() => Reflect.construct(Array, huge as never)).toThrow(refused);
    expect(() => String.raw({ raw: huge })).toThrow(refused);
    const tooManyLocales = new RegExp(`at most ${MAX_LOCALES}`);
    expect(() => new Intl.NumberFormat(huge as never)).toThrow(tooManyLocales);
    expect(() => Intl.NumberFormat(huge as never)).toThrow(tooManyLocales);
    expect(() => (1).toLocaleString(huge as never)).toThrow(tooManyLocales);
    expect(() => "a".localeCompare("b", huge as never)).toThrow(tooManyLocales);
    expect(() => Intl.getCanonicalLocales(huge as never)).toThrow(tooManyLocales);
    expect(() => Intl.Collator.supportedLocalesOf(huge as never)).toThrow(tooManyLocales);
    expect(() => new Intl.Collator(new Array(MAX_LOCALES + 1).fill("en"))).toThrow(tooManyLocales);
  });

  it("read a length or an iterator method once: a getter that answers short, then long, gets nothing", () => {
    const flipping = () => {
      let reads = 0;
      return {
        get length() {
          return reads++ ? 2 ** 32 - 1 : 2;
        },
        0: 5,
        1: 6,
      };
    };
    expect([...new Uint8Array(flipping())]).toEqual([5, 6]);
    expect([...Uint8Array.from(flipping())]).toEqual([5, 6]);
    expect(Array.from(flipping())).toEqual([5, 6]);
    expect(Math.max.apply(null, flipping() as never)).toBe(6);
    // An iterator method to the look and none to the built-in would walk the long length.
    const iterableOnce = () => {
      let looks = 0;
      return {
        get [Symbol.iterator]() {
          return looks++
            ? undefined
            : function* () {
                yield 1;
                yield 2;
              };
        },
        length: 2 ** 32 - 1,
      };
    };
    expect(Array.from(iterableOnce() as never)).toEqual([1, 2]);
    expect([...new Uint8Array(iterableOnce() as never)]).toEqual([1, 2]);
    expect([...Float32Array.from(iterableOnce() as never)]).toEqual([1, 2]);
  });

  it("work as the built-ins otherwise", () => {
    expect([...new Uint8Array({ length: 3, 0: 1, 2: 300 } as never)]).toEqual([1, 0, 44]);
    expect([...new Uint8Array(new Set([1, 2]))]).toEqual([1, 2]);
    expect(new Uint8Array(new ArrayBuffer(4), 1, 2).length).toBe(2);
    expect([...Uint8Array.from({ length: 2 }, (_, i) => i * 2)]).toEqual([0, 2]);
    class Bytes extends Uint8Array {}
    const bytes = new Bytes({ length: 2, 0: 9 } as never);
    expect(bytes).toBeInstanceOf(Bytes);
    expect(bytes[0]).toBe(9);
    expect(bytes.subarray(0, 1)).toBeInstanceOf(Bytes);
    expect([Uint8Array.name, Uint8Array.length, Uint8Array.BYTES_PER_ELEMENT]).toEqual(["Uint8Array", 3, 1]);
    expect(new Uint8Array(1).constructor).toBe(Uint8Array);
    expect(Object.getPrototypeOf(Uint8Array)).toBe(Object.getPrototypeOf(Int8Array));
    expect(() => (Uint8Array as unknown as () => unknown)()).toThrow(TypeError);
    const target = new Uint8Array(4);
    target.set({ length: 2, 0: 7, 1: 8 } as never, 1);
    target.set("9" as never, 3);
    expect([...target]).toEqual([0, 7, 8, 9]);
    expect(Array.from({ length: 2, 1: "b" })).toEqual([undefined, "b"]);
    expect(Array.from(new Map([[1, 2]]))).toEqual([[1, 2]]);
    function largest(..._values: number[]) {
      // biome-ignore lint/complexity/noArguments: an arguments object is what apply is handed here
      return Math.max.apply(null, arguments as never);
    }
    expect(largest(1, 3, 2)).toBe(3);
    expect(String.fromCharCode.apply(null, new Uint8Array([65, 66]) as never)).toBe("AB");
    expect(Reflect.construct(Date, [0]).getTime()).toBe(0);
    class Base {}
    class Derived extends Base {}
    expect(Reflect.construct(Base, [], Derived)).toBeInstanceOf(Derived);
    expect(String.raw`a${1}\n${2}`).toBe("a1\\n2");
    expect(String.raw({ raw: ["x", "y", "z"] }, 1)).toBe("x1yz");
    expect(() => String.raw(undefined as never)).toThrow(TypeError);
    expect(() => String.raw({ raw: [Symbol()] } as never)).toThrow(TypeError);
  });

  it("toLocaleString of a typed array and Intl with a locale list answer as before", () => {
    const values = [1.5, 2, -0.25, 1234.5];
    expect(new Float32Array(values).toLocaleString("de-DE")).toBe(values.toLocaleString("de-DE"));
    expect(new Float64Array(values).toLocaleString("en-US", { style: "percent" })).toBe(
      values.toLocaleString("en-US", { style: "percent" }),
    );
    expect(BigInt64Array.from([1000n, 2n]).toLocaleString("en-US")).toBe("1,000,2");
    expect(() => Reflect.apply(Uint8Array.prototype.toLocaleString, [1], [])).toThrow(TypeError);
    expect(new Intl.NumberFormat({ length: 1, 0: "de-DE" } as never).format(1.5)).toBe("1,5");
    expect(new Intl.NumberFormat(new Intl.Locale("de-DE")).format(1.5)).toBe("1,5");
    expect(Intl.NumberFormat("de-DE").format(1.5)).toBe("1,5");
    expect(Intl.getCanonicalLocales({ length: 3, 1: "EN-us" } as never)).toEqual(["en-US"]);
    expect("a".localeCompare("b", ["en"])).toBe(-1);
    expect("i".toLocaleUpperCase("tr")).toBe("İ");
    expect(new Date(0).toLocaleDateString("en-US", { timeZone: "UTC" })).toBe("1/1/1970");
    expect(new Intl.PluralRules(["en"]).select(1)).toBe("one");
    expect(new Intl.Collator("en")).toBeInstanceOf(Intl.Collator);
  });
});

describe("lastIndexOf", () => {
  it("answers as the built-in, by slices when its search could compare long", () => {
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % below;
    };
    const letters = (length: number) => Array.from({ length }, () => "ab"[random(2)]).join("");
    const text = letters(2 ** 20 + 3);
    for (let round = 0; round < 60; round++) {
      const length = 17 + random(48);
      const from = random(text.length - length);
      // Half found in the text, half random (mostly absent).
      const pattern = round % 2 ? text.slice(from, from + length) : letters(length);
      const position = [undefined, random(text.length), Number.NaN, -5, Infinity, `${random(text.length)}`][
        round % 6
      ];
      expect(text.lastIndexOf(pattern, position as number), `round ${round}`).toBe(
        Reflect.apply(nativeLastIndexOf, text, [pattern, position]),
      );
    }
    expect("abcabc".lastIndexOf("bc")).toBe(4);
    expect("abc".lastIndexOf("")).toBe(3);
    expect("abc".lastIndexOf("", 1)).toBe(1);
    expect(() => String.prototype.lastIndexOf.call(null, "a")).toThrow(TypeError);
  });
});

describe("what capsule code replaces", () => {
  it("cannot lift a bound: its own WeakSet.prototype.has, Set.prototype.has or array iterator", () => {
    const { has: weakSetHas } = WeakSet.prototype;
    const { has: setHas } = Set.prototype;
    const arrayIterator = Array.prototype[Symbol.iterator];
    let reads = 0;
    const proxied = new Proxy([], {
      get: (target, key, receiver) =>
        key === "length" ? (reads++ ? 2 ** 40 : 0) : Reflect.get(target, key, receiver),
    });
    const holes: unknown[] = [];
    holes.length = 2 ** 32 - 1;
    const outcomes: unknown[] = [];
    const attempt = (run: () => unknown) => {
      try {
        outcomes.push(run());
      } catch (caught) {
        outcomes.push(caught);
      }
    };
    // Replaced only around the calls: the test runner itself needs them.
    WeakSet.prototype.has = () => false;
    Set.prototype.has = () => true;
    Array.prototype[Symbol.iterator] = function* () {} as never;
    try {
      attempt(() => (proxied as unknown[]).indexOf(1));
      attempt(() => holes.includes(1));
      attempt(() => ([] as unknown[]).concat(holes));
    } finally {
      WeakSet.prototype.has = weakSetHas;
      Set.prototype.has = setHas;
      Array.prototype[Symbol.iterator] = arrayIterator;
    }
    expect(outcomes[0]).toBe(-1);
    expect(reads).toBe(1);
    expect(String(outcomes[1])).toMatch(refused);
    expect(String(outcomes[2])).toMatch(refused);
  });
});
