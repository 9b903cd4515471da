import { describe, expect, it, vi } from "vitest";
import { type Group, newGroup, type Subscriber, subscribingCallers } from "./group.js";
import { HeldBytes } from "./held-bytes.js";
import { LiveState } from "./live-state.js";

/** A group of `caller` in deployment `d` with one subscriber of that caller. */
function groupOf(caller: string, name: string): Group {
  const group = newGroup("d", name, "{}", null, caller);
  const subscriber: Subscriber = { value: () => {}, error: () => {}, caller };
  group.subscribers.set(subscriber, undefined);
  return group;
}

describe("LiveState: groups waiting for room", () => {
  it("looks at each limit once per release, however many groups of a full share wait", () => {
    // A client fills its share, then puts thousands of groups in line: each release anywhere in
    // the deployment walked all of them in full (18 ms each with 16,000; an attack review).
    const ran: Group[] = [];
    const state = new LiveState(
      { deployment: 1e9, caller: 1000, host: 1e12 },
      (g) => ran.push(g),
      subscribingCallers,
    );
    const big = groupOf("greedy", "big");
    expect(state.keep(big, 1000, 10)).toBeUndefined();
    const waiting = Array.from({ length: 2000 }, (_, i) => groupOf("greedy", `w${i}`));
    for (const group of waiting) expect(state.keep(group, 100, 0)).toBe("caller");
    const other = groupOf("other", "other");
    expect(state.keep(other, 50, 10)).toBeUndefined();

    const passed = vi.spyOn(HeldBytes.prototype, "passed");
    try {
      state.release(other);
      expect(passed.mock.calls.length).toBeLessThanOrEqual(2);
      expect(ran).toEqual([]);
      // Room in the greedy share again: the oldest that fit run, in order, and no more.
      passed.mockClear();
      state.release(big);
      expect(ran).toEqual(waiting.slice(0, ran.length));
      expect(ran.length).toBeGreaterThan(0);
      expect(passed.mock.calls.length).toBeLessThanOrEqual(ran.length + 2);
    } finally {
      passed.mockRestore();
    }
  });
});
