import { describe, expect, it } from "vitest";
import { TurnTaker } from "./turn-taker.js";

describe("TurnTaker", () => {
  it("is due once its share of the clock has passed, and lets other work run when taken", async () => {
    let clock = 100;
    const turns = new TurnTaker(8, () => clock);
    expect(turns.due()).toBe(false);
    clock += 7.9;
    expect(turns.due()).toBe(false);
    clock += 0.1;
    expect(turns.due()).toBe(true);
    let other = false;
    setImmediate(() => {
      other = true;
    });
    await turns.take();
    expect(other).toBe(true);
    // The share starts again after the turn.
    expect(turns.due()).toBe(false);
    clock += 8;
    expect(turns.due()).toBe(true);
  });
});
