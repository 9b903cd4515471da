import { describe, expect, it } from "vitest";
import { ConcurrencyLimiter } from "./limiter.js";

/** A promise settled from outside. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("ConcurrencyLimiter", () => {
  it("runs at most `slots` at once, starts the free ones at once, and the waiting ones in order", async () => {
    const limiter = new ConcurrencyLimiter(2);
    const started: number[] = [];
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const runs = gates.map((gate, i) =>
      limiter.run(async () => {
        started.push(i);
        await gate.promise;
        return i * 10;
      }),
    );
    expect(started).toEqual([0, 1]);
    await turn();
    expect(started).toEqual([0, 1]);
    gates[1]?.resolve();
    await turn();
    expect(started).toEqual([0, 1, 2]);
    // A newcomer while one waits does not jump the queue.
    const late = limiter.run(async () => {
      started.push(9);
      return 90;
    });
    gates[0]?.resolve();
    await turn();
    expect(started).toEqual([0, 1, 2, 3]);
    gates[2]?.resolve();
    gates[3]?.resolve();
    expect(await Promise.all([...runs, late])).toEqual([0, 10, 20, 30, 90]);
    expect(started).toEqual([0, 1, 2, 3, 9]);
  });

  it("frees the slot when work rejects or throws before returning a promise", async () => {
    const limiter = new ConcurrencyLimiter(1);
    await expect(limiter.run(async () => Promise.reject(new Error("rejected")))).rejects.toThrow("rejected");
    await expect(
      limiter.run(() => {
        throw new Error("thrown");
      }),
    ).rejects.toThrow("thrown");
    expect(await limiter.run(async () => "still free")).toBe("still free");
  });
});
