import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RequestQuota } from "./request-quota.js";
import type { Outgoing } from "./sync-guards.js";
import { type Push, SocketPushes } from "./sync-pushes.js";

function push(text: string): Push {
  return { message: () => text, length: text.length, current: () => true };
}

describe("SocketPushes over its quota", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A socket whose quota (2 at once, `perSecond`) is spent by two results, with two more held. */
  const setUp = (perSecond: number) => {
    const quota = new RequestQuota({ burst: 2, perSecond });
    const sent: Outgoing[] = [];
    const pushes = new SocketPushes(
      quota,
      "caller",
      (message) => sent.push(message),
      () => true,
      () => true,
      () => {},
    );
    pushes.push("a", push("a1"));
    pushes.push("b", push("b1"));
    // The quota is spent: these wait.
    pushes.push("a", push("a2"));
    pushes.push("c", push("c1"));
    return { quota, sent, pushes };
  };

  it("sends an error reply at once, leaving the held results to wait for the quota", () => {
    // Every reply once took the held results along for nothing: a client sending junk messages
    // had its results pushed at 7 times its quota (an attack review, 2026-12-06).
    const { sent, pushes } = setUp(1);
    pushes.reply('{"type":"error"}');
    vi.advanceTimersByTime(100);
    expect(sent).toEqual(["a1", "b1", '{"type":"error"}']);
    // One more request's worth a second: one result goes, then the other.
    vi.advanceTimersByTime(1400);
    expect(sent).toEqual(["a1", "b1", '{"type":"error"}', "a2"]);
    vi.advanceTimersByTime(1000);
    expect(sent).toEqual(["a1", "b1", '{"type":"error"}', "a2", "c1"]);
  });

  it("sends a mutation's answer after the held results, their cost taken from the quota as debt", () => {
    const { quota, sent, pushes } = setUp(0.001);
    pushes.reply('{"type":"mutationResult"}', true);
    vi.advanceTimersByTime(100);
    expect(sent).toEqual(["a1", "b1", "a2", "c1", '{"type":"mutationResult"}']);
    // Two results' worth owed: the next request waits for it.
    expect(quota.tryTake("caller")).toBe(false);
    expect(quota.waitMs("caller")).toBeGreaterThan(2000_000);
  });
});
