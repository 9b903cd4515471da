import { describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { FairScheduler } from "./scheduler.js";

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

describe("FairScheduler", () => {
  it("runs at most `slots` at once, starts the free ones at once, and the waiting ones in order", async () => {
    const lane = new FairScheduler(2, 0).lane("one");
    const started: number[] = [];
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const runs = gates.map((gate, i) =>
      lane.run(async () => {
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
    const late = lane.run(async () => {
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

  it("refuses waiting and new calls once closed, and starts none of them when slots come back", async () => {
    const scheduler = new FairScheduler(1, 0);
    const lane = scheduler.lane("one");
    const gate = deferred();
    const running = lane.run(() => gate.promise);
    let started = false;
    const waiting = lane.run(async () => {
      started = true;
    });
    scheduler.close();
    const refusedWaiting = await waiting.then(
      () => null,
      (error: unknown) => error,
    );
    expect(isPlatformError(refusedWaiting, "unavailable")).toBe(true);
    await expect(lane.run(async () => "late")).rejects.toThrow("shutting down");
    gate.resolve();
    await running;
    await turn();
    expect(started).toBe(false);
  });

  it("frees the slot when work rejects or throws before returning a promise", async () => {
    const lane = new FairScheduler(1, 0).lane("one");
    await expect(lane.run(async () => Promise.reject(new Error("rejected")))).rejects.toThrow("rejected");
    await expect(
      lane.run(() => {
        throw new Error("thrown");
      }),
    ).rejects.toThrow("thrown");
    expect(await lane.run(async () => "still free")).toBe("still free");
  });

  it("gives freed slots to the waiting deployments in turn, not in arrival order", async () => {
    const scheduler = new FairScheduler(1, 0);
    const [flood, other] = [scheduler.lane("flood"), scheduler.lane("other")];
    const started: string[] = [];
    const gate = deferred();
    const first = flood.run(() => gate.promise);
    const runs = [
      ...Array.from({ length: 5 }, (_, i) => flood.run(async () => started.push(`flood${i}`))),
      other.run(async () => started.push("other")),
    ];
    gate.resolve();
    await Promise.all([first, ...runs]);
    expect(started.indexOf("other")).toBe(1);
  });

  it("keeps the reserve for deployments with nothing running", async () => {
    const scheduler = new FairScheduler(4, 2);
    const [busy, idle] = [scheduler.lane("busy"), scheduler.lane("idle")];
    const gate = deferred();
    const started: string[] = [];
    const hanging = Array.from({ length: 4 }, (_, i) =>
      busy.run(async () => {
        started.push(`busy${i}`);
        await gate.promise;
      }),
    );
    expect(started).toEqual(["busy0", "busy1"]);
    await idle.run(async () => started.push("idle"));
    expect(started).toEqual(["busy0", "busy1", "idle"]);
    gate.resolve();
    await Promise.all(hanging);
    expect(started).toHaveLength(5);
  });

  it("refuses a call beyond the deployment's queue with 503 unavailable and a retry delay", async () => {
    const lane = new FairScheduler(LIMITS.deploymentCallsInFlight, 0).lane("flooded");
    const gate = deferred();
    const calls = Array.from({ length: LIMITS.deploymentCallsInFlight + LIMITS.deploymentQueuedCalls }, () =>
      lane.run(() => gate.promise),
    );
    const refused = await lane.run(() => gate.promise).catch((error: unknown) => error);
    expect(isPlatformError(refused, "unavailable")).toBe(true);
    expect(refused).toMatchObject({ status: 503, retryAfterSeconds: LIMITS.busyRetryAfterSeconds });
    expect((refused as Error).message).toContain("Deployment flooded is busy");
    gate.resolve();
    await Promise.all(calls);
  });
});
