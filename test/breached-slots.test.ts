/**
 * Deployments stopped for a limit share LIMITS.breachedCallsRunning execution slots (docs/security.md
 * "Scheduling"), over real HTTP with real isolates: once two such deployments hold those slots with
 * calls that hang, a third one stopped at its first call waits for them, while a deployment that
 * answered LIMITS.breachForgivenCalls calls before its stop, and one never stopped, answer at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpResponse } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule } from "platform/server";
export default capsule({
  schema: {},
  queries: {
    ok: async () => "ok",
    hang: async () => new Promise(() => {}),
    spin: async () => { for (;;) {} },
    // About 90 MiB kept until it returns: above half the 128 MiB heap, under the limit.
    churn: async () => { const kept = []; for (let i = 0; i < 115; i++) kept.push(new Array(1e5).fill(i)); return kept.length; },
  },
});
`;

let host: TestHost;
const pending: Array<Promise<unknown>> = [];

/** Stops `id`'s isolate at its CPU limit with one call. */
async function stopAtCpuLimit(id: string): Promise<void> {
  const response = await host.call(id, "query", "spin");
  expect(response.status, response.text()).toBe(504);
  expect(response.json<{ error: { code: string } }>().error.code).toBe("timeout");
}

/** A call the test does not wait for (it may hang until the host closes). */
function fire(id: string, name: string): Promise<HttpResponse | null> {
  const call = host.call(id, "query", name).catch(() => null);
  pending.push(call);
  return call;
}

/** Whether `call` settles within `ms`. */
function settlesWithin(call: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([
    call.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(resolve, ms, false)),
  ]);
}

describe("deployments stopped for a limit", () => {
  beforeAll(async () => {
    const code = await sourceCode(CAPSULE);
    host = await startTestHost();
    for (const id of ["hog1", "hog2", "newcomer", "established", "good", "churner"]) {
      expect((await host.deployCode(id, code)).status).toBe(201);
    }
  }, 120_000);

  afterAll(async () => {
    await host.dispose();
    await Promise.all(pending);
  });

  it("share two slots; an established app stopped once and a good one keep theirs", async () => {
    expect(LIMITS.breachedCallsRunning).toBe(2);
    for (let i = 0; i < LIMITS.breachForgivenCalls; i++) {
      expect((await host.call("established", "query", "ok")).status).toBe(200);
    }
    await Promise.all(["hog1", "hog2", "newcomer", "established"].map(stopAtCpuLimit));

    // The two hogs take both shared slots with calls that hang until the wall-clock limit.
    const hogs = [fire("hog1", "hang"), fire("hog2", "hang")];
    const newcomer = fire("newcomer", "ok");
    const hogsStillHang = async () => !(await settlesWithin(Promise.race(hogs), 0));
    // The others answer while the hogs still hang: they did not wait for a shared slot.
    const established = await host.call("established", "query", "ok");
    expect(established.status, established.text()).toBe(200);
    expect(await hogsStillHang()).toBe(true);
    const good = await host.call("good", "query", "ok");
    expect(good.status, good.text()).toBe(200);
    expect(await hogsStillHang()).toBe(true);
    // The newcomer's call waits for a shared slot, which the hogs hold until the wall-clock limit.
    expect(await settlesWithin(newcomer, 1000)).toBe(false);
    expect(await hogsStillHang()).toBe(true);
  }, 120_000);

  it("counts a call on the isolate's thread that leaves the heap above half its limit as a stop", async () => {
    const held = () => host.deployments.pool.breachedDeployments();
    expect(held()).not.toContain("churner");
    // The first run overruns its inline slice and runs again on the isolate's thread; the heap is
    // read after the answer, off the main thread.
    const deadline = Date.now() + 30_000;
    while (!held().includes("churner") && Date.now() < deadline) {
      const response = await host.call("churner", "query", "churn");
      expect(response.status, response.text()).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(held()).toContain("churner");
    expect(held()).not.toContain("good");
  }, 120_000);
});
