import { describe, expect, it } from "vitest";
import { newGroup, nextRunOf, type Subscriber } from "./group.js";
import { startRun } from "./group-runs.js";
import { RerunQueue } from "./rerun-queue.js";

const subscriber: Subscriber = { value: () => {}, error: () => {} };

describe("startRun", () => {
  it("runs again while commits come during an execution, then leaves the group due no more", async () => {
    const group = newGroup("d", "q", "{}", null, "");
    group.subscribers.set(subscriber, undefined);
    let executions = 0;
    const run = startRun(group, new RerunQueue(2), async () => {
      executions++;
      await new Promise((resolve) => setImmediate(resolve));
      // A commit while the first execution ran: it read before it.
      if (executions === 1) group.dirty = true;
    });
    expect(group.running).toBe(run);
    const waiting = nextRunOf(group);
    await run;
    await waiting;
    expect(executions).toBe(2);
    expect([group.started, group.finished, group.running]).toEqual([2, 2, undefined]);
  });

  it("settles at once for a group everyone left, its place free: the group is not left running", async () => {
    const group = newGroup("d", "q", "{}", null, "");
    let executions = 0;
    const run = startRun(group, new RerunQueue(2), async () => {
      executions++;
    });
    await run;
    expect(executions).toBe(0);
    expect(group.running).toBeUndefined();
  });
});
