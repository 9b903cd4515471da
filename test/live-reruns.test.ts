/**
 * Live-query re-runs take turns: a commit touching more subscriptions than the deployment's call
 * queue holds (LIMITS.deploymentCallsInFlight + deploymentQueuedCalls) re-runs every one of them
 * and pushes each its new value (none is refused as `unavailable`), and a call of the deployment
 * made while they run still gets in.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LiveQueries } from "../host/live/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let live: LiveQueries;

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("live", "live")).status).toBe(201);
  live = new LiveQueries(host.deployments);
});
afterAll(async () => {
  live.close();
  await host.dispose();
});

const call = (kind: "query" | "mutation", name: string, args: unknown) =>
  host.deployments.call("live", { kind, name, argsJson: JSON.stringify(args), identity: null });

describe("live-query re-runs", () => {
  it("re-run every touched subscription in turns, leaving room for the deployment's other calls", async () => {
    const count = 2 * (LIMITS.deploymentCallsInFlight + LIMITS.deploymentQueuedCalls) + 17;
    const buckets = Array.from({ length: count }, (_, i) => 5000 + i);
    const latest = new Map<number, unknown>();
    const errors: unknown[] = [];
    for (const bucket of buckets) {
      await live.subscribe("live", "byBucket", JSON.stringify({ bucket }), null, {
        value: (json) => latest.set(bucket, JSON.parse(json)),
        error: (error) => errors.push(error),
      });
    }
    const before = live.executions;
    await call("mutation", "addMany", { buckets });
    // The commit's re-runs are under way (or waiting their turn) now.
    const meanwhile = await call("query", "byBucket", { bucket: 5000 });
    await live.settled();
    expect(JSON.parse(meanwhile.valueJson)).toEqual(["in 5000"]);
    expect(errors).toEqual([]);
    expect(live.executions - before).toBe(count);
    expect(buckets.filter((bucket) => JSON.stringify(latest.get(bucket)) !== `["in ${bucket}"]`)).toEqual([]);
  }, 120_000);
});
