import { describe, expect, it, vi } from "vitest";
import { InboundBudget, InboundBudgets } from "./sync-guards.js";
import { SYNC_LIMITS } from "./sync-messages.js";

describe("InboundBudgets", () => {
  it("looks for addresses to forget only once those remembered have doubled, not at every open", () => {
    // Addresses still owing their budget are kept; with thousands of them, every open looked at
    // all of them again (0.74 ms an open with 65,536; an attack review, 2026-12-06).
    const budgets = new InboundBudgets(true);
    for (let i = 0; i < 3000; i++) {
      const take = budgets.open(`owing-${i}`);
      expect(take(SYNC_LIMITS.inboundBurstBytes)).toBe(true);
      budgets.close(`owing-${i}`);
    }
    const full = vi.spyOn(InboundBudget.prototype, "full");
    try {
      for (let i = 0; i < 500; i++) {
        budgets.open(`new-${i}`);
        budgets.close(`new-${i}`);
      }
      expect(full.mock.calls.length).toBeLessThan(3 * 3500);
    } finally {
      full.mockRestore();
    }
    // An address whose budget is whole and has no socket is still forgotten when it closes.
    const take = budgets.open("returning");
    budgets.close("returning");
    expect(take(1)).toBe(true);
  });
});
