import { describe, expect, it } from "vitest";
import { LIMITS } from "../../../sdk/protocol/index.js";
import { MainThreadTurns, type TurnRunner } from "./main-thread-turns.js";

/**
 * The turns' clock (ms), moved only by the entries below: what each rule decides does not depend
 * on how fast the machine runs the test.
 */
let clockMs = 0;
const clock = () => clockMs;

/**
 * A queue of `entries` entries, each holding the main thread `entryMs` on {@link clock}; logs each
 * entry by name. Its typical entry is known (`entryMs`) once `known`.
 */
function runner(
  name: string,
  recentNs: number,
  entries: number,
  entryMs: number,
  log: string[],
  known = false,
): TurnRunner {
  let left = entries;
  const enter = () => {
    clockMs += entryMs;
    log.push(name);
    left--;
  };
  return {
    recentNs: () => recentNs,
    typicalEntryMs: () => (known ? entryMs : 0),
    runUntil(untilMs) {
      do enter();
      while (left > 0 && clock() < untilMs);
      return left > 0;
    },
  };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("the main thread's inline turns", () => {
  it("run the deployments that used the least inline CPU first", async () => {
    const turns = new MainThreadTurns(clock);
    const log: string[] = [];
    turns.ready(runner("heavy", 50e6, 1, 0, log));
    turns.ready(runner("light", 0, 1, 0, log));
    turns.ready(runner("middle", 1e6, 1, 0, log));
    await nextTurn();
    expect(log).toEqual(["light", "middle", "heavy"]);
  });

  it("stop a turn at its budget, one entry at least, and go on in the next turn after I/O", async () => {
    const turns = new MainThreadTurns(clock);
    const log: string[] = [];
    // Each entry takes the whole budget: one entry per turn, the lightest first.
    turns.ready(runner("a", 0, 2, LIMITS.inlineTurnMs, log));
    turns.ready(runner("b", 1, 1, LIMITS.inlineTurnMs, log));
    let polled = 0;
    const poll = setInterval(() => polled++, 0);
    await nextTurn();
    expect(log).toEqual(["a"]);
    // Sockets and timers were served between turns.
    while (log.length < 3) await new Promise((resolve) => setTimeout(resolve, 1));
    clearInterval(poll);
    expect(log.slice(1).sort()).toEqual(["a", "b"]);
    expect(polled).toBeGreaterThan(0);
  });

  it("let a queue of known light entries in after new deployments took the budget", async () => {
    const turns = new MainThreadTurns(clock);
    const log: string[] = [];
    // Three new deployments (nothing used lately, cost not known yet) go first; the first takes
    // the whole budget.
    for (const name of ["new1", "new2", "new3"]) turns.ready(runner(name, 0, 1, LIMITS.inlineTurnMs, log));
    // A busy tenant whose entries are known to be light, with two entries queued...
    turns.ready(runner("light", 5e6, 2, 0.01, log, true));
    // ...and one whose entries are known to be heavy.
    turns.ready(runner("heavy", 5e6, 1, LIMITS.inlineTurnMs, log, true));
    await nextTurn();
    // One entry of the light queue got in; the other new deployments and the heavy one wait.
    expect(log).toEqual(["new1", "light"]);
    while (log.length < 6) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(log.slice(2).sort()).toEqual(["heavy", "light", "new2", "new3"]);
  });

  it("let known light entries in after an entry of a whole slice took far more than the budget", async () => {
    const turns = new MainThreadTurns(clock);
    const log: string[] = [];
    // A deployment whose entries each spin a slice, just under the sentinel's, goes first.
    turns.ready(runner("spinner", 0, 1, 20, log));
    turns.ready(runner("light", 5e6, 1, 0.01, log, true));
    await nextTurn();
    expect(log).toEqual(["spinner", "light"]);
  });

  it("run many short entries of several deployments in one turn", async () => {
    const turns = new MainThreadTurns(clock);
    const log: string[] = [];
    for (const name of ["a", "b", "c"]) turns.ready(runner(name, 0, 3, 0, log));
    await nextTurn();
    expect(log).toHaveLength(9);
  });

  it("keep a runner that threw, and the ones after it, for the next turn", async () => {
    const turns = new MainThreadTurns(clock);
    const log: string[] = [];
    let throws = true;
    turns.ready({
      recentNs: () => 0,
      typicalEntryMs: () => 0,
      runUntil() {
        if (throws) {
          throws = false;
          throw new Error("entry failed");
        }
        log.push("failing");
        return false;
      },
    });
    turns.ready(runner("after", 1, 1, 0, log));
    const errors: unknown[] = [];
    const listeners = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    process.once("uncaughtException", (error) => errors.push(error));
    try {
      await nextTurn();
      await nextTurn();
    } finally {
      for (const listener of listeners) process.on("uncaughtException", listener);
    }
    expect(errors).toHaveLength(1);
    expect(log).toEqual(["failing", "after"]);
  });
});
