import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_INLINE_POLICY, InlineOverrunBudget, InlineStanding } from "./policy.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("InlineOverrunBudget", () => {
  it("lets 20 spinning deployments cost one slice each once, then one per refill between them", () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const policy = DEFAULT_INLINE_POLICY;
    const budget = new InlineOverrunBudget(policy);
    const standings = Array.from({ length: 20 }, () => new InlineStanding(policy, budget));
    // Each overruns its first slice: 20 demotions at once.
    for (const standing of standings) standing.demote();
    let slices = 20;
    // Over the next minute, every standing whose cool-down ended and that the budget lets back
    // inline overruns again at once.
    for (let ms = 0; ms < 60_000; ms += 100) {
      vi.advanceTimersByTime(100);
      for (const standing of standings)
        if (standing.allowed) {
          standing.demote();
          slices++;
        }
    }
    // Without the budget each would come back after 1, 2, 4, 8, 16 and 32 s: 120 more slices.
    expect(slices - 20).toBeLessThanOrEqual(60_000 / policy.overrunRefillMs);
    // A deployment never demoted runs inline whatever the budget.
    expect(new InlineStanding(policy, budget).allowed).toBe(true);
  });
});
