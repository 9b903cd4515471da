import { describe, expect, it } from "vitest";
import { OwnerLimit } from "./owner-limit.js";

/** Starts a turn of `owner` that holds until its gate opens; `started` says whether it began. */
function holding(limit: OwnerLimit, owner: string) {
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const turn = { started: false, open: () => open(), done: Promise.resolve() };
  turn.done = limit.run(owner, async () => {
    turn.started = true;
    await gate;
  });
  return turn;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe("OwnerLimit", () => {
  it("gives one owner at most perOwner places, the rest of its turns in arrival order", async () => {
    const limit = new OwnerLimit(10, 2, 1);
    const turns = ["a1", "a2", "a3", "a4"].map(() => holding(limit, "a"));
    await settle();
    expect(turns.map((t) => t.started)).toEqual([true, true, false, false]);
    expect(limit.runningOf("a")).toBe(2);
    turns[0]?.open();
    await settle();
    expect(turns.map((t) => t.started)).toEqual([true, true, true, false]);
    for (const turn of turns) turn.open();
    await Promise.all(turns.map((t) => t.done));
    expect(limit.runningOf("a")).toBe(0);
  });

  it("keeps the last spare places for owners holding none, and gives a freed place to the one holding fewest", async () => {
    // 6 places, 4 per owner, 2 spare: an owner holding some starts another only while 3 are free.
    const limit = new OwnerLimit(6, 4, 2);
    const a = [1, 2, 3, 4, 5].map(() => holding(limit, "a"));
    const b = [1, 2].map(() => holding(limit, "b"));
    await settle();
    // a holds 4 (its limit); b's first starts (it held none), its second waits: 5 taken, 1 free.
    expect(a.map((t) => t.started)).toEqual([true, true, true, true, false]);
    expect(b.map((t) => t.started)).toEqual([true, false]);
    // c, holding none, takes the last place; d then waits.
    const c = holding(limit, "c");
    const d = holding(limit, "d");
    await settle();
    expect([c.started, d.started]).toEqual([true, false]);
    // A place freed by a goes to d (holding none), not to b or a.
    a[0]?.open();
    await settle();
    expect([d.started, b[1]?.started, a[4]?.started]).toEqual([true, false, false]);
    for (const turn of [...a, ...b, c, d]) turn.open();
    await Promise.all([...a, ...b, c, d].map((t) => t.done));
    expect([limit.runningOf("a"), limit.runningOf("b")]).toEqual([0, 0]);
  });

  it("gives a failed turn's place back", async () => {
    const limit = new OwnerLimit(1, 1, 0);
    const failed = limit
      .run("a", async () => {
        throw new Error("no");
      })
      .catch((error: Error) => error.message);
    expect(await failed).toBe("no");
    expect(await limit.run("b", async () => "b ran")).toBe("b ran");
  });
});
