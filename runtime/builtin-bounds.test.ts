import { describe, expect, it } from "vitest";
import { numericOrder } from "./builtin-bounds.js";

describe("numericOrder", () => {
  it("orders as a typed array's own sort does: -0 before +0, NaN last", () => {
    const values = [3, Number.NaN, -0, 0, -Infinity, 2.5, Number.NaN, Infinity, -7, 0, -0];
    for (const Typed of [Float64Array, Float32Array]) {
      const native = Typed.from(values).sort();
      const ours = Typed.from(values).sort(numericOrder);
      expect([...ours].map((v) => (Object.is(v, -0) ? "-0" : v))).toEqual(
        [...native].map((v) => (Object.is(v, -0) ? "-0" : v)),
      );
    }
    const big = BigInt64Array.from([5n, -3n, 0n, 9n]);
    expect([...big.slice().sort(numericOrder)]).toEqual([...big.slice().sort()]);
  });
});
