/**
 * The bounds on built-ins V8 cannot stop midway (runtime/builtin-bounds.ts), installed in this
 * test's own process as the runtime installs them in an isolate: what they refuse, the ways around
 * them the fixes' review found, and that ordinary code sees the built-ins it knows.
 * test/sandbox.test.ts (23c) runs the one-liners that ended the host inside real isolates.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { boundBuiltins, MAX_WALKED_ELEMENTS, numericOrder } from "./builtin-bounds.js";

beforeAll(() => boundBuiltins());

const refused = /capsules may (walk|run it over) at most/;

describe("array walks", () => {
  it("refuse a length that changes between reads, from a getter, valueOf or a proxy", () => {
    let reads = 0;
    const flipping = {
      get length() {
        return reads++ ? 2 ** 40 : 0;
      },
    };
    // The length is read once: 0, and the walk is over nothing.
    expect(Array.prototype.indexOf.call(flipping, 1)).toBe(-1);
    expect(reads).toBe(1);
    const numberLike = { length: { valueOf: () => 2 ** 40 } };
    expect(() => Array.prototype.includes.call(numberLike, 1)).toThrow(refused);
    let trapReads = 0;
    const proxied = new Proxy([], {
      get: (t, k, r) => (k === "length" ? (trapReads++ ? 2 ** 40 : 0) : Reflect.get(t, k, r)),
    });
    expect(Array.isArray(proxied)).toBe(true);
    expect((proxied as unknown[]).indexOf(1)).toBe(-1);
    expect(trapReads).toBe(1);
    const revocable = Proxy.revocable({ length: 2 ** 40 }, {});
    expect(() => Array.prototype.forEach.call(revocable.proxy, () => {})).toThrow(refused);
  });

  it("refuse a spreading flag that turns on after a first look, and nested holes in flat", () => {
    let looks = 0;
    const sneaky = {
      get [Symbol.isConcatSpreadable]() {
        return looks++ > 0;
      },
      length: 2 ** 40,
    };
    // Read once: not spread, so it is one element.
    const concat = (receiver: unknown, ...items: unknown[]) =>
      Array.prototype.concat.apply(receiver, items as never);
    expect(concat([1], sneaky)).toEqual([1, sneaky]);
    const spread = { [Symbol.isConcatSpreadable]: true, length: 2 ** 32 - 2 };
    expect(() => concat([], spread)).toThrow(refused);
    const holes: unknown[] = [];
    holes.length = 2 ** 32 - 1;
    expect(() => [holes].flat()).toThrow(refused);
    expect(() => [1].flatMap(() => holes)).toThrow(refused);
  });

  it("work as the built-ins on arrays, array-likes, strings and subclasses", () => {
    const like = { length: 2, 0: "a", 1: "b" };
    expect(Array.prototype.map.call(like, (x: string) => x + x)).toEqual(["aa", "bb"]);
    expect(Array.prototype.fill.call(like, "z")).toBe(like);
    expect(like).toEqual({ length: 2, 0: "z", 1: "z" });
    const reversed = { length: 3, 0: 1, 2: 3 };
    expect(Array.prototype.reverse.call(reversed)).toBe(reversed);
    expect(reversed).toEqual({ length: 3, 0: 3, 2: 1 });
    expect(Array.prototype.indexOf.call("abc", "b")).toBe(1);
    expect(Array.prototype.join.call({ length: 2, 0: 1, 1: 2 }, "-")).toBe("1-2");
    const object = { a: 1 };
    const concat = (receiver: unknown, ...items: unknown[]) =>
      Array.prototype.concat.apply(receiver, items as never);
    expect(concat([1], object, [2, [3]], "x")).toEqual([1, object, 2, [3], "x"]);
    expect(concat([1], { [Symbol.isConcatSpreadable]: true, length: 2, 1: "b" })).toEqual([
      1,
      undefined,
      "b",
    ]);
    expect(Array.prototype.concat.call({ a: 1 }, 2)).toEqual([{ a: 1 }, 2]);
    expect([1, [2, [3, [4]]]].flat()).toEqual([1, 2, [3, [4]]]);
    expect([1, [2, [3, [4]]]].flat(Infinity)).toEqual([1, 2, 3, 4]);
    expect([1, [2, [3]]].flat(0)).toEqual([1, [2, [3]]]);
    const holey = [1, 2, 3];
    delete holey[1];
    expect(holey.flat()).toEqual([1, 3]);
    expect([1, 2].flatMap((x) => [x, x * 10])).toEqual([1, 10, 2, 20]);
    class Listing extends Array {}
    const listing = Listing.from([1, [2]]) as Listing;
    expect(listing.concat([3])).toBeInstanceOf(Listing);
    expect(listing.flat()).toBeInstanceOf(Listing);
    expect(listing.map((x) => x)).toBeInstanceOf(Listing);
    expect(() => Array.prototype.map.call(null, () => 1)).toThrow(TypeError);
    expect(() => Array.prototype.flat.call(undefined)).toThrow(TypeError);
    expect(() => [1].flatMap(1 as never)).toThrow(TypeError);
    expect([3, 1, 2].sort()).toEqual([1, 2, 3]);
    expect([].map.name).toBe("map");
    expect([].concat.length).toBe(1);
    const big = new Array(MAX_WALKED_ELEMENTS + 1);
    expect(() => big.indexOf(1)).toThrow(refused);
  });
});

describe("typed arrays", () => {
  it("sort long ones by the real length, however a subclass reports it", () => {
    class Short extends Float64Array {
      override get length() {
        return 0;
      }
    }
    const values = new Short([3, -0, 0, Number.NaN, -1]);
    expect(
      [...(Float64Array.prototype.sort.call(values) as Float64Array)].map((v) =>
        Object.is(v, -0) ? "-0" : v,
      ),
    ).toEqual([-1, "-0", 0, 3, Number.NaN]);
  });

  it("numericOrder orders as a typed array's own sort does: -0 before +0, NaN last", () => {
    const values = [3, Number.NaN, -0, 0, -Infinity, 2.5, Number.NaN, Infinity, -7, 0, -0];
    for (const Typed of [Float64Array, Float32Array]) {
      const native = [...Typed.from(values).sort(undefined)];
      const ours = [...Typed.from(values).sort(numericOrder)];
      const shown = (list: number[]) => list.map((v) => (Object.is(v, -0) ? "-0" : v));
      expect(shown(ours)).toEqual(shown(native));
    }
    const big = BigInt64Array.from([5n, -3n, 0n, 9n]);
    expect([...big.slice().sort(numericOrder)]).toEqual([...big.slice().sort()]);
  });
});

describe("string walks", () => {
  const long = "ab".repeat(2 ** 20 + 1);
  const replaceAll = (receiver: unknown, pattern: string, replacement: string) =>
    Reflect.apply(String.prototype.replaceAll, receiver, [pattern, replacement]) as string;

  it("refuse long replacements, matches and splits, whatever the receiver and however reached", () => {
    expect(() => long.replaceAll("a", "bb")).toThrow(refused);
    expect(() => replaceAll(new String(long), "a", "bb")).toThrow(refused);
    let calls = 0;
    const shifty = { toString: () => (calls++ ? long : "a") };
    expect(replaceAll(shifty, "a", "bb")).toBe("bb");
    expect(() => long.replace(/a/g, "bb")).toThrow(refused);
    expect(() => /a/g[Symbol.replace](long, "bb")).toThrow(refused);
    expect(() => long.match(/a/g)).toThrow(refused);
    expect(() => "ab".repeat(2 ** 22 + 1).split("a")).toThrow(refused);
    expect(() => "ab".repeat(2 ** 22 + 1).split(/a/)).toThrow(refused);
  });

  it("work as the built-ins otherwise, a function replacement at any length", () => {
    expect(`${"x".repeat(2 ** 21)}a`.replaceAll("a", () => "bb").length).toBe(2 ** 21 + 2);
    expect("a-b-c".replaceAll("-", "+")).toBe("a+b+c");
    expect("a-b".replace("-", "$&$&")).toBe("a--b");
    expect("2024-01".replace(/(\d+)-(\d+)/, "$2/$1")).toBe("01/2024");
    expect("a,b".split(",")).toEqual(["a", "b"]);
    expect("abc".match(/b/)?.index).toBe(1);
    expect("e\u0301".normalize("NFC")).toBe("\u00e9");
    expect(() => replaceAll(null, "a", "b")).toThrow(TypeError);
  });
});
