/** RerunQueue: at most `limit` runs at once, started in order of arrival; a failure frees its place. */
import { describe, expect, it } from "vitest";
import { RerunQueue } from "./rerun-queue.js";

describe("RerunQueue", () => {
  it("runs at most `limit` at once, first come first served, past failures", async () => {
    const queue = new RerunQueue(3);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const finished: Array<Promise<void>> = [];
    for (let i = 0; i < 2000; i++) {
      finished.push(
        new Promise<void>((resolve) => {
          queue.enqueue(async () => {
            started.push(i);
            running++;
            most = Math.max(most, running);
            await new Promise((r) => setImmediate(r));
            running--;
            resolve();
            if (i % 7 === 0) throw new Error("a failed run");
          });
        }),
      );
    }
    expect(queue.size).toBe(2000);
    await Promise.all(finished);
    await new Promise((r) => setImmediate(r));
    expect(most).toBe(3);
    expect(started).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(queue.size).toBe(0);
  });
});
