import { describe, expect, it } from "vitest";
import { newGroup, type Outcome, type Subscriber } from "./group.js";
import { OutcomeDelivery } from "./outcome-delivery.js";

/**
 * Deliveries whose clock moves 1 ms per push (`clock.ms`), pushing 8 ms a turn, and a count of the
 * event loop's turns (a chain of setImmediate, as the delivery's).
 */
function delivery() {
  const clock = { ms: 0 };
  const pushed: Array<{ deployment: string; count: number }> = [];
  const deliver = new OutcomeDelivery(
    { pushed: (deployment, count) => pushed.push({ deployment, count }) },
    { ms: 8, now: () => clock.ms },
  );
  const loop = { turn: 0, stopped: false };
  const tick = () => {
    loop.turn++;
    if (!loop.stopped) setImmediate(tick);
  };
  setImmediate(tick);
  return { deliver, clock, pushed, loop };
}

/** Subscribers of a fresh group, each recording the outcome values it was pushed and in which turn. */
function subscribers(count: number, clock: { ms: number }, loop: { turn: number }) {
  const group = newGroup("d", "q", "{}", null, "");
  const got = new Map<number, Array<{ value: string; turn: number }>>();
  const make = (index: number, onPush?: () => void): Subscriber => ({
    value: (valueJson) => {
      clock.ms += 1;
      got.set(index, [...(got.get(index) ?? []), { value: valueJson, turn: loop.turn }]);
      onPush?.();
    },
    error: () => {},
  });
  const all = Array.from({ length: count }, (_, index) => make(index));
  for (const subscriber of all) group.subscribers.set(subscriber, undefined);
  return { group, got, all, make };
}

describe("OutcomeDelivery", () => {
  it("pushes to every subscriber, handing the event loop back between stretches", async () => {
    const { deliver, clock, pushed, loop } = delivery();
    const { group, got } = subscribers(100, clock, loop);
    group.outcome = { valueJson: "1" };
    await deliver.deliver(group);
    loop.stopped = true;
    expect(got.size).toBe(100);
    const turns = new Set([...got.values()].map((pushes) => pushes[0]?.turn));
    // 8 pushes a stretch (1 ms each on the delivery's clock): 13 stretches, each in its own turn.
    expect(turns.size).toBe(13);
    expect(pushed.reduce((sum, { count }) => sum + count, 0)).toBe(100);
    expect(pushed.every(({ deployment }) => deployment === "d")).toBe(true);
  });

  it("reaches subscribers joining meanwhile, and not those who left, even during a turn between stretches", async () => {
    const { deliver, clock, loop } = delivery();
    const { group, got, all, make } = subscribers(40, clock, loop);
    const late = make(100);
    // Subscriber 99, pushed first, sees subscriber 30 leave and 100 join before they are reached.
    const first = make(99, () => {
      group.subscribers.delete(all[30] as Subscriber);
      group.subscribers.set(late, undefined);
    });
    group.subscribers.clear();
    for (const subscriber of [first, ...all]) group.subscribers.set(subscriber, undefined);
    // The first stretch ends with subscriber 6; subscriber 7, next, leaves during the turn between.
    const sixth = all[6] as Subscriber;
    const value = sixth.value.bind(sixth);
    sixth.value = (json, encoded) => {
      value(json, encoded);
      setImmediate(() => group.subscribers.delete(all[7] as Subscriber));
    };
    group.outcome = { valueJson: "1" };
    await deliver.deliver(group);
    loop.stopped = true;
    expect(got.has(30)).toBe(false);
    expect(got.has(7)).toBe(false);
    expect(got.has(8)).toBe(true);
    expect(got.get(100)?.map((push) => push.value)).toEqual(["1"]);
    expect([...got.values()].every((pushes) => pushes.length === 1)).toBe(true);
  });

  it("stops once the group has a newer outcome, whose delivery reaches the rest", async () => {
    const { deliver, clock, loop } = delivery();
    const { group, got, all } = subscribers(40, clock, loop);
    const older: Outcome = { valueJson: "1" };
    const newer: Outcome = { valueJson: "2" };
    // The newer outcome comes while subscriber 3 is pushed.
    const third = all[3] as Subscriber;
    const value = third.value.bind(third);
    third.value = (json, encoded) => {
      value(json, encoded);
      group.outcome = newer;
    };
    group.outcome = older;
    await deliver.deliver(group);
    expect([...got.keys()].sort((a, b) => a - b)).toEqual([0, 1, 2, 3]);
    await deliver.deliver(group);
    loop.stopped = true;
    expect(got.size).toBe(40);
    expect(got.get(0)?.map((push) => push.value)).toEqual(["1", "2"]);
    expect(got.get(39)?.map((push) => push.value)).toEqual(["2"]);
  });

  it("shares one budget a turn between all deliveries, taking them in turn", async () => {
    const { deliver, clock, loop } = delivery();
    const a = subscribers(20, clock, loop);
    const b = subscribers(20, clock, loop);
    a.group.outcome = { valueJson: "1" };
    b.group.outcome = { valueJson: "2" };
    await Promise.all([deliver.deliver(a.group), deliver.deliver(b.group)]);
    loop.stopped = true;
    const perTurn = new Map<number, number>();
    for (const { got } of [a, b])
      for (const pushes of got.values())
        for (const { turn } of pushes) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
    expect(a.got.size + b.got.size).toBe(40);
    // 40 pushes of 1 ms, 8 a turn whichever group they are for: 5 turns (a budget each: 3).
    expect([...perTurn.values()]).toEqual([8, 8, 8, 8, 8]);
    // In turn: b does not wait for the whole of a.
    expect(b.got.get(0)?.[0]?.turn).toBeLessThan(a.got.get(19)?.[0]?.turn as number);
  });

  it("counts only the pushing against a turn's budget, not the work between deliveries", async () => {
    const { deliver, clock, loop } = delivery();
    const a = subscribers(4, clock, loop);
    const b = subscribers(4, clock, loop);
    a.group.outcome = { valueJson: "1" };
    b.group.outcome = { valueJson: "2" };
    const first = deliver.deliver(a.group);
    // A query's run between the two deliveries, in the same turn: 100 ms on the clock.
    clock.ms += 100;
    const second = deliver.deliver(b.group);
    await Promise.all([first, second]);
    loop.stopped = true;
    const turns = new Set([...a.got.values(), ...b.got.values()].map((pushes) => pushes[0]?.turn));
    expect(turns.size).toBe(1);
  });

  it("stops once the group is no longer live (its deployment was deleted)", async () => {
    const { deliver, clock, loop } = delivery();
    const { group, got } = subscribers(40, clock, loop);
    let live = true;
    group.outcome = { valueJson: "1" };
    const delivered = deliver.deliver(group, () => live);
    live = false;
    await delivered;
    loop.stopped = true;
    // The first stretch ran at once, before it was dropped.
    expect(got.size).toBe(8);
  });

  it("fails the delivery whose subscriber throws, and goes on with the others", async () => {
    const { deliver, clock, loop } = delivery();
    const a = subscribers(20, clock, loop);
    const b = subscribers(20, clock, loop);
    (a.all[10] as Subscriber).value = () => {
      throw new Error("socket gone wrong");
    };
    a.group.outcome = { valueJson: "1" };
    b.group.outcome = { valueJson: "2" };
    const results = await Promise.allSettled([deliver.deliver(a.group), deliver.deliver(b.group)]);
    loop.stopped = true;
    expect(results.map((result) => result.status)).toEqual(["rejected", "fulfilled"]);
    expect(b.got.size).toBe(20);
  });

  it("gives one joiner the outcome alone, once", () => {
    const { deliver, clock, pushed, loop } = delivery();
    const { group, got, all } = subscribers(3, clock, loop);
    loop.stopped = true;
    group.outcome = { error: { code: "bad_request", message: "no" } };
    const errors: unknown[] = [];
    const joiner: Subscriber = { value: () => {}, error: (error) => errors.push(error) };
    group.subscribers.set(joiner, undefined);
    deliver.deliverTo(group, joiner);
    deliver.deliverTo(group, joiner);
    expect(errors).toEqual([{ code: "bad_request", message: "no" }]);
    expect(got.size).toBe(0);
    expect(group.subscribers.get(all[0] as Subscriber)).toBeUndefined();
    expect(pushed).toEqual([{ deployment: "d", count: 1 }]);
  });
});
