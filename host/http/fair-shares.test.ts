import { describe, expect, it, vi } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { FairShares, type Holding } from "./fair-shares.js";

/** Shares on a clock of the test's, and holdings added to them that record being dropped. */
function shares() {
  const clock = { ms: 0 };
  const fair = new FairShares(() => clock.ms);
  const dropped: string[] = [];
  const hold = (
    key: string,
    name: string,
    bytes: number,
    options: { droppable?: boolean; movedAt?: number } = {},
  ) => {
    const holding: Holding = {
      bytes,
      droppable: options.droppable ?? true,
      movedAt: () => options.movedAt ?? 0,
      drop: () => {
        dropped.push(name);
        fair.held.remove(key, bytes);
        fair.untrack(key, holding);
      },
    };
    fair.track(key, holding);
    fair.held.add(key, bytes);
  };
  return { fair, clock, dropped, hold };
}

describe("FairShares", () => {
  it("drops what is needed only, from addresses above an even share, heaviest first, oldest first", () => {
    const { fair, clock, dropped, hold } = shares();
    clock.ms = LIMITS.heldStalledMs;
    hold("a", "a1", 30);
    hold("a", "a2", 30);
    hold("b", "b1", 25);
    hold("b", "b2", 5);
    hold("c", "c1", 10);
    // 100 of 100 held; "d" asks for 20: an even share is 25, "c" (10) is within it.
    expect(fair.withinEvenShare("d", 20, 100)).toBe(true);
    expect(fair.makeRoom("d", 20, 100)).toBe(true);
    expect(dropped).toEqual(["a1"]);
    // Again 20 more for "e" (share 20): "a" (30) and "b" (30) are above it.
    fair.held.add("d", 20);
    expect(fair.makeRoom("e", 20, 100)).toBe(true);
    expect(dropped).toEqual(["a1", "a2"]);
  });

  it("never drops a holding that moves, a write's answer, or one of an address within its share", () => {
    const { fair, clock, dropped, hold } = shares();
    clock.ms = LIMITS.heldStalledMs;
    hold("a", "moving", 40, { movedAt: clock.ms });
    hold("a", "write", 40, { droppable: false });
    hold("b", "within", 20);
    expect(fair.makeRoom("c", 10, 100)).toBe(false);
    expect(dropped).toEqual([]);
    // Standing still long enough, the moving one may go.
    clock.ms += LIMITS.heldStalledMs;
    expect(fair.makeRoom("c", 10, 100)).toBe(true);
    expect(dropped).toEqual(["moving"]);
  });

  it("never drops the asking address's own holdings", () => {
    const { fair, clock, dropped, hold } = shares();
    clock.ms = LIMITS.heldStalledMs;
    hold("a", "mine", 90);
    hold("b", "theirs", 10);
    expect(fair.withinEvenShare("a", 20, 100)).toBe(false);
    expect(fair.makeRoom("a", 20, 100)).toBe(false);
    expect(dropped).toEqual([]);
  });

  it("looks at holdings that cannot tell when they move every half second while any is held", () => {
    vi.useFakeTimers();
    try {
      const fair = new FairShares();
      let looks = 0;
      const holding: Holding = {
        bytes: 1,
        droppable: true,
        movedAt: () => 0,
        look: () => looks++,
        drop: () => {},
      };
      fair.track("a", holding);
      vi.advanceTimersByTime(LIMITS.heldStalledMs);
      expect(looks).toBe(2);
      fair.untrack("a", holding);
      vi.advanceTimersByTime(LIMITS.heldStalledMs);
      expect(looks).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });
});
