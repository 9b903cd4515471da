import { describe, expect, it } from "vitest";
import { DEFAULT_INLINE_POLICY, nextCooldownMs } from "./policy.js";

const policy = { ...DEFAULT_INLINE_POLICY, cooldownMs: 1000, maxCooldownMs: 8000 };

describe("inline cool-downs", () => {
  it("starts short, doubles for a deployment demoted again soon, and resets after a quiet spell", () => {
    expect(nextCooldownMs(policy, null, 0)).toBe(1000);
    // Demoted again 2 s after a 1 s cool-down ended: twice as long.
    expect(nextCooldownMs(policy, { endedAt: 1000, cooldownMs: 1000 }, 3000)).toBe(2000);
    expect(nextCooldownMs(policy, { endedAt: 5000, cooldownMs: 2000 }, 5000)).toBe(4000);
    // Capped.
    expect(nextCooldownMs(policy, { endedAt: 9000, cooldownMs: 8000 }, 9500)).toBe(8000);
    // Quiet for the longest cool-down: back to the first one.
    expect(nextCooldownMs(policy, { endedAt: 9000, cooldownMs: 8000 }, 17_000)).toBe(1000);
  });
});
