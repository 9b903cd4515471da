import { describe, expect, it } from "vitest";
import { beginExecution } from "./determinism.js";

describe("the seeded random sequence", () => {
  it("starts every seed where it always has: a re-run of a stored subscription gives the same answer", () => {
    const states = [0, 1, 12345, 0xffffffff, -7].map((seed) => beginExecution(1, 0, seed, false).random);
    expect(states).toEqual([
      [-980866456, 1753287708, 1219590337, -2052912929],
      [1565655694, 964231562, -1858586342, -2052912930],
      [-53358137, -538970116, -1805292896, -2052900618],
      [-2111787074, -1481517798, 1655773421, 2052912952],
      [-743683472, -1803314685, -76214898, 2052912950],
    ]);
  });
});
