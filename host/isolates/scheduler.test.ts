import { afterEach, describe, expect, it, vi } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { deferred } from "../../test/helpers/deferred.js";
import { type DeploymentLane, FairScheduler } from "./scheduler.js";

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Runs one call on `lane` that records its start as `name` and waits for the returned gate. */
function hold(lane: DeploymentLane, started: string[], name: string) {
  const gate = deferred();
  const run = lane.run(async () => {
    started.push(name);
    await gate.promise;
  });
  return { gate, run };
}

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

  describe("deployments stopped for a limit", () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it("share a few slots between them while other deployments run as before", async () => {
      const scheduler = new FairScheduler(10, 0, 2);
      const lanes = ["a", "b", "c"].map((id) => scheduler.lane(id));
      for (const lane of lanes) lane.markBreached();
      const started: string[] = [];
      const calls = lanes.map((lane) => hold(lane, started, lane.deploymentId));
      expect(started).toEqual(["a", "b"]);
      await scheduler.lane("good").run(async () => started.push("good"));
      expect(started).toEqual(["a", "b", "good"]);
      calls[0]?.gate.resolve();
      await calls[0]?.run;
      await turn();
      expect(started).toEqual(["a", "b", "good", "c"]);
      for (const call of calls) call.gate.resolve();
      await Promise.all(calls.map((call) => call.run));
    });

    it("count as breached for breachPauseMaxMs after the stop, then take plain slots again", async () => {
      vi.useFakeTimers({ toFake: ["Date"] });
      const scheduler = new FairScheduler(10, 0, 1);
      const [hog, later] = [scheduler.lane("hog"), scheduler.lane("later")];
      hog.markBreached();
      later.markBreached();
      const started: string[] = [];
      const held = hold(hog, started, "hog");
      const waiting = hold(later, started, "later");
      expect(started).toEqual(["hog"]);
      vi.setSystemTime(Date.now() + LIMITS.breachPauseMaxMs + 1);
      // The mark has expired, but only a slot coming back starts a waiting call.
      const fresh = hold(scheduler.lane("fresh"), started, "fresh");
      expect(started).toEqual(["hog", "fresh"]);
      held.gate.resolve();
      await held.run;
      expect(started).toEqual(["hog", "fresh", "later"]);
      for (const call of [waiting, fresh]) call.gate.resolve();
      await Promise.all([waiting.run, fresh.run]);
    });

    it("give back only the breached slots they took: a call marked midway returns a plain one", async () => {
      const scheduler = new FairScheduler(10, 0, 1);
      const [stopped, other] = [scheduler.lane("stopped"), scheduler.lane("other")];
      const started: string[] = [];
      const first = hold(stopped, started, "first");
      stopped.markBreached();
      other.markBreached();
      const second = hold(other, started, "second");
      const third = hold(stopped, started, "third");
      expect(started).toEqual(["first", "second"]);
      first.gate.resolve();
      await first.run;
      await turn();
      // The first call took no breached slot, so its end frees none: the third still waits.
      expect(started).toEqual(["first", "second"]);
      second.gate.resolve();
      await second.run;
      await turn();
      expect(started).toEqual(["first", "second", "third"]);
      third.gate.resolve();
      await third.run;
    });
  });

  describe("one developer's deployments", () => {
    it("take the reserve only while none of them runs anything, as one deployment would", async () => {
      const scheduler = new FairScheduler(4, 2);
      const started: string[] = [];
      // The attack: each of a developer's deployments with one call that hangs. Before, each had
      // nothing running of its own, so each took a reserved slot and the host filled up.
      const mine = ["a1", "a2", "a3", "a4"].map((id) =>
        hold(
          scheduler.lane(id, () => "dev-a"),
          started,
          id,
        ),
      );
      expect(started).toEqual(["a1", "a2"]);
      const other = hold(
        scheduler.lane("b1", () => "dev-b"),
        started,
        "b1",
      );
      const unclaimed = hold(
        scheduler.lane("c1", () => null),
        started,
        "c1",
      );
      expect(started).toEqual(["a1", "a2", "b1", "c1"]);
      for (const call of [...mine, other, unclaimed]) call.gate.resolve();
      await Promise.all([...mine, other, unclaimed].map((call) => call.run));
      expect(started).toHaveLength(6);
    });

    it(`run ${LIMITS.ownerCallsInFlight} calls at most between them; the rest wait in their queues`, async () => {
      const scheduler = new FairScheduler(LIMITS.ownerCallsInFlight + 8, 0);
      const started: string[] = [];
      const mine = Array.from({ length: LIMITS.ownerCallsInFlight + 2 }, (_, i) =>
        hold(
          scheduler.lane(`d${i}`, () => "dev-a"),
          started,
          `d${i}`,
        ),
      );
      expect(started).toHaveLength(LIMITS.ownerCallsInFlight);
      const other = hold(
        scheduler.lane("b1", () => "dev-b"),
        started,
        "b1",
      );
      expect(started.at(-1)).toBe("b1");
      // One of the developer's calls ends: one of their waiting calls takes its place.
      mine[0]?.gate.resolve();
      await mine[0]?.run;
      await turn();
      expect(started).toHaveLength(LIMITS.ownerCallsInFlight + 2);
      expect(started.at(-1)).toBe(`d${LIMITS.ownerCallsInFlight}`);
      for (const call of [...mine, other]) call.gate.resolve();
      await Promise.all([...mine, other].map((call) => call.run));
      expect(started).toHaveLength(LIMITS.ownerCallsInFlight + 3);
    });

    it("count against the owner a call's slot was taken for, after a claim too", async () => {
      const scheduler = new FairScheduler(2, 1);
      let owner: string | null = null;
      const started: string[] = [];
      const claimed = scheduler.lane("app", () => owner);
      const first = hold(claimed, started, "first");
      // Claimed while its call runs: the call's slot goes back to the deployment's own count.
      owner = "dev-a";
      const second = hold(claimed, started, "second");
      expect(started).toEqual(["first", "second"]);
      first.gate.resolve();
      second.gate.resolve();
      await Promise.all([first.run, second.run]);
      // Nothing is counted any more: the developer's next call finds the reserve again.
      const held = hold(
        scheduler.lane("busy", () => "dev-b"),
        started,
        "busy",
      );
      await claimed.run(async () => started.push("after"));
      expect(started).toEqual(["first", "second", "busy", "after"]);
      held.gate.resolve();
      await held.run;
    });

    it("hold one breached deployments' slot at most", async () => {
      const scheduler = new FairScheduler(10, 0, 2);
      const lanes = ["a1", "a2"].map((id) => scheduler.lane(id, () => "dev-a"));
      const victim = scheduler.lane("v", () => "dev-v");
      for (const lane of [...lanes, victim]) lane.markBreached();
      const started: string[] = [];
      const calls = lanes.map((lane) => hold(lane, started, lane.deploymentId));
      const victims = hold(victim, started, "v");
      expect(started).toEqual(["a1", "v"]);
      for (const call of [...calls, victims]) call.gate.resolve();
      await Promise.all([...calls, victims].map((call) => call.run));
      expect(started).toHaveLength(3);
    });
  });
});
