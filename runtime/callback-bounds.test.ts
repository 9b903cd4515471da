/**
 * Long walks calling a built-in as their callback, an array's default sort order, and long
 * typed-array sorts (runtime/callback-bounds.ts, typed-sort.ts), installed in this test's own
 * process as the runtime installs them in an isolate: they answer as the built-ins did.
 * test/sandbox.test.ts (23d) shows them stopped by the CPU limit inside real isolates.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { boundBuiltins, MAX_NATIVE_SORT_ELEMENTS } from "./builtin-bounds.js";
import { MAX_NATIVE_CALLBACK_WALK } from "./callback-bounds.js";

// Captured before the bounds are installed, to compare with.
const nativeArraySort = Array.prototype.sort;
const nativeTypedSort = Object.getPrototypeOf(Uint8Array.prototype).sort as (compare?: unknown) => unknown;

beforeAll(() => boundBuiltins());

let seed = 11;
function random(below: number): number {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % below;
}
const long = MAX_NATIVE_CALLBACK_WALK + 5;
const shown = (values: ArrayLike<unknown>) =>
  Array.from(values, (v) => (Object.is(v, -0) ? "-0" : typeof v === "bigint" ? `${v}n` : v));

describe("long walks with a built-in callback", () => {
  it("answer as before, reduce with and without its initial value", () => {
    const values = Array.from({ length: long }, () => random(1000) / 7);
    expect(values.map(Math.round)).toEqual(values.map((v) => Math.round(v)));
    const sum = values.reduce((a, b) => a + b);
    expect(values.reduce((a, b) => a + b, 1000)).toBe(1000 + sum);
    expect(values.reduceRight((a, b) => a + b, 0)).toBeCloseTo(sum, 3);
    expect(values.findLast(Number.isInteger)).toBe(values.findLast((v) => Number.isInteger(v)));
    const seen: unknown[] = [];
    values.forEach(function (this: unknown[], v) {
      this.push(v);
    }, seen);
    expect(seen.length).toBe(long);
    const typed = Float64Array.from(values);
    expect(typed.map(Math.round)).toEqual(typed.map((v) => Math.round(v)));
    expect(typed.reduce((a, b) => Math.max(a, b))).toBe(values.reduce((a, b) => Math.max(a, b)));
    expect(typed.findIndex(Number.isInteger)).toBe(values.findIndex((v) => Number.isInteger(v)));
    expect(typed.some(Number.isNaN)).toBe(false);
    expect("1,22".replace(/\d+/g, String)).toBe("1,22");
    expect("a-b".replaceAll("-", encodeURIComponent)).toBe("a-b");
  });

  it("an array's default order is by strings, undefined and holes last", () => {
    const values: unknown[] = Array.from({ length: long }, (_, i) =>
      i % 97 === 0 ? undefined : i % 13 === 0 ? `s${random(50)}` : random(100000) - 500,
    );
    delete values[7];
    const expected = Reflect.apply(nativeArraySort, values.slice(), []) as unknown[];
    expect(values.slice().sort()).toEqual(expected);
    expect(values.toSorted()).toEqual(expected);
    expect(7 in values.slice().sort()).toBe(true);
    expect(() => [Symbol(), ...new Array(long).fill(1)].sort()).toThrow(TypeError);
  });

  it("refuse what V8 prepares in C++ before the first call: a sort past 2 Mi elements, a regular expression's replacement past 2 Mi characters", () => {
    const many = new Array(2 ** 21 + 1).fill(0);
    expect(() => many.sort((a, b) => a - b)).toThrow(
      /Array\.prototype\.sort on 2097153 elements: capsules may walk at most 2097152/,
    );
    expect(() => many.toSorted()).toThrow(/at most 2097152/);
    expect(many.slice(1).sort((a, b) => a - b).length).toBe(2 ** 21);
    const text = "a".repeat(2 ** 21 + 1);
    expect(() => text.replace(/a/g, () => "b")).toThrow(
      /String\.prototype\.replace on 2097153 characters.*matchAll/,
    );
    expect(text.replaceAll("a", () => "b").length).toBe(2 ** 21 + 1);
  });
});

describe("long typed-array sorts", () => {
  it("sort in runs as the built-in does: -0 before +0, NaN last, the real kind, never the species", () => {
    const length = MAX_NATIVE_SORT_ELEMENTS * 2 + 3;
    const values = new Float64Array(length);
    for (let i = 0; i < length; i++) values[i] = (random(2000) - 1000) / 3;
    values[5] = Number.NaN;
    values[9] = -0;
    values[11] = 0;
    values[length - 1] = -Infinity;
    const expected = Reflect.apply(nativeTypedSort, values.slice(), []) as Float64Array;
    const sorted = values.slice().sort();
    expect(shown(sorted.subarray(0, 50))).toEqual(shown(expected.subarray(0, 50)));
    expect(sorted.every((v, i) => Object.is(v, expected[i]))).toBe(true);
    const copy = values.toSorted();
    expect(copy).toBeInstanceOf(Float64Array);
    expect(copy.every((v, i) => Object.is(v, expected[i]))).toBe(true);
    expect(Object.is(values[5], Number.NaN)).toBe(true);
    class Odd extends Int32Array {
      static get [Symbol.species]() {
        return Uint8Array;
      }
    }
    const odd = new Odd(MAX_NATIVE_SORT_ELEMENTS + 9);
    for (let i = 0; i < odd.length; i++) odd[i] = ((i * 7919) % 100003) - 50000;
    const oddSorted = Reflect.apply(nativeTypedSort, Int32Array.from(odd), []) as Int32Array;
    expect(odd.sort()).toBe(odd);
    expect(odd.every((v, i) => v === oddSorted[i])).toBe(true);
  });

  it("with a comparison: the same order, stable, its result read as a number", () => {
    const length = 20000;
    const values = new Int32Array(length);
    for (let i = 0; i < length; i++) values[i] = random(100) * 1000 + i;
    // Ties by the thousands: a stable sort keeps the original order inside each.
    const byThousands = (a: number, b: number) => Math.floor(a / 1000) - Math.floor(b / 1000);
    const expected = Reflect.apply(nativeTypedSort, values.slice(), [byThousands]) as Int32Array;
    expect([...values.slice().sort(byThousands)]).toEqual([...expected]);
    expect([...values.toSorted((a, b) => b - a)]).toEqual([...values].sort((a, b) => b - a));
    const stringly = values.slice().sort((a, b) => `${a - b}` as never);
    expect([...stringly]).toEqual([...values].sort((a, b) => a - b));
    expect([...values.slice().sort(() => Number.NaN)]).toEqual([...values]);
    expect(
      shown(
        BigInt64Array.from({ length }, (_, i) => BigInt(length - i))
          .sort((a, b) => Number(a - b))
          .subarray(0, 3),
      ),
    ).toEqual(["1n", "2n", "3n"]);
    expect(() => values.slice().sort(5 as never)).toThrow(TypeError);
    expect(() => new Int32Array(3).sort(5 as never)).toThrow(TypeError);
  });
});
