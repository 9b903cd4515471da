import { describe, expect, it } from "vitest";
import { SnapshotLender, type SnapshotLoan } from "./snapshot-lender.js";

/** A view that only counts how often it was closed (the store's behaviour is in the kv conformance suite). */
class View {
  closes = 0;
  constructor(readonly id: number) {}
  async close(): Promise<void> {
    this.closes++;
  }
}

function countingLender() {
  const taken: View[] = [];
  const lender = new SnapshotLender(() => {
    const view = new View(taken.length);
    taken.push(view);
    return view;
  });
  return { lender, taken };
}

describe("SnapshotLender", () => {
  it("lends one view to every reader between two writes and closes it once, after its last reader", async () => {
    const { lender, taken } = countingLender();
    const a = lender.borrow();
    const b = lender.borrow();
    await a.release();
    const c = lender.borrow();
    expect([a.snapshot, b.snapshot, c.snapshot]).toEqual([taken[0], taken[0], taken[0]]);
    expect(taken).toHaveLength(1);
    await lender.writing(async () => {});
    expect(taken[0]?.closes).toBe(0);
    const d = lender.borrow();
    expect(d.snapshot).toBe(taken[1]);
    await b.release();
    await b.release();
    expect(taken[0]?.closes).toBe(0);
    await c.release();
    expect(taken[0]?.closes).toBe(1);
    await d.release();
    expect(taken[1]?.closes).toBe(0);
  });

  it("closes a view nobody reads as soon as a write begins", async () => {
    const { lender, taken } = countingLender();
    await lender.borrow().release();
    expect(taken[0]?.closes).toBe(0);
    await lender.writing(async () => {
      await Promise.resolve();
    });
    expect(taken[0]?.closes).toBe(1);
    lender.retire();
    expect(taken[0]?.closes).toBe(1);
  });

  it("gives each reader its own view while a write is in flight, even when the write fails", async () => {
    const { lender, taken } = countingLender();
    let during: Array<SnapshotLoan<View>> = [];
    await expect(
      lender.writing(async () => {
        during = [lender.borrow(), lender.borrow()];
        throw new Error("disk full");
      }),
    ).rejects.toThrow("disk full");
    expect(during.map((loan) => loan.snapshot)).toEqual([taken[0], taken[1]]);
    for (const loan of during) await loan.release();
    expect(taken.map((view) => view.closes)).toEqual([1, 1]);
    const next = lender.borrow();
    expect(next.snapshot).toBe(taken[2]);
    expect(lender.borrow().snapshot).toBe(taken[2]);
  });
});
