/**
 * Live queries on the host: a write inside a subscription's read set re-runs it, a write outside
 * does not (executions counted); with 1,000 subscriptions, a write touching 10 re-runs exactly 10;
 * identical subscriptions share one execution; results are pushed only when they change.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LiveQueries } from "../host/live/index.js";
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

const mutate = (name: string, args: unknown) =>
  host.deployments.call("live", { kind: "mutation", name, argsJson: JSON.stringify(args), identity: null });

function collector() {
  const values: unknown[] = [];
  return {
    values,
    subscriber: {
      value: (json: string) => values.push(JSON.parse(json)),
      error: (e: unknown) => values.push({ error: e }),
    },
  };
}

describe("live queries", () => {
  it("re-runs a subscription when a write touches its range, not otherwise, and pushes only changes", async () => {
    const a = collector();
    const b = collector();
    await live.subscribe("live", "byBucket", JSON.stringify({ bucket: 1 }), null, a.subscriber);
    await live.subscribe("live", "byBucket", JSON.stringify({ bucket: 2 }), null, b.subscriber);
    expect([a.values, b.values]).toEqual([[[]], [[]]]);
    const before = live.executions;
    await mutate("add", { bucket: 1, text: "one" });
    await live.settled();
    expect(live.executions - before).toBe(1);
    expect(a.values).toEqual([[], ["one"]]);
    expect(b.values).toEqual([[]]);
    await mutate("add", { bucket: 3, text: "elsewhere" });
    await live.settled();
    expect(live.executions - before).toBe(1);
  });

  it("shares one execution between identical subscriptions", async () => {
    const first = collector();
    const second = collector();
    const before = live.executions;
    await live.subscribe("live", "byBucket", JSON.stringify({ bucket: 9 }), null, first.subscriber);
    await live.subscribe("live", "byBucket", JSON.stringify({ bucket: 9 }), null, second.subscriber);
    expect(live.executions - before).toBe(1);
    expect(second.values).toEqual([[]]);
    await mutate("add", { bucket: 9, text: "shared" });
    await live.settled();
    expect(live.executions - before).toBe(2);
    expect([first.values.at(-1), second.values.at(-1)]).toEqual([["shared"], ["shared"]]);
  });

  it("hands every subscriber of a result the same encoded bytes, made once", async () => {
    const encodings: Buffer[] = [];
    const subscriber = {
      value: (json: string, encoded: () => Buffer) => {
        encodings.push(encoded());
        expect(encoded().toString()).toBe(json);
      },
      error: () => {},
    };
    const args = JSON.stringify({ bucket: 10 });
    await live.subscribe("live", "byBucket", args, null, subscriber);
    await live.subscribe("live", "byBucket", args, null, { ...subscriber });
    encodings.length = 0;
    await mutate("add", { bucket: 10, text: "once, for both: é ✓" });
    await live.settled();
    expect(encodings).toHaveLength(2);
    expect(encodings[0]).toBe(encodings[1]);
  });

  it("is never invalidated by the clock alone", async () => {
    const clock = collector();
    await live.subscribe("live", "clock", "{}", null, clock.subscriber);
    const before = live.executions;
    await new Promise((resolve) => setTimeout(resolve, 50));
    await mutate("add", { bucket: 50, text: "unrelated" });
    await live.settled();
    expect(live.executions - before).toBe(0);
    expect(clock.values).toHaveLength(1);
  });

  it("with 1,000 subscriptions, a write affecting 10 re-runs exactly those 10", async () => {
    const base = 1000;
    const pushes = new Map<number, number>();
    for (let i = 0; i < 1000; i++) {
      await live.subscribe("live", "byBucket", JSON.stringify({ bucket: base + i }), null, {
        value: () => pushes.set(base + i, (pushes.get(base + i) ?? 0) + 1),
        error: () => {},
      });
    }
    const before = live.executions;
    await mutate("addMany", { buckets: Array.from({ length: 10 }, (_, i) => base + i * 100) });
    await live.settled();
    expect(live.executions - before).toBe(10);
    const changed = [...pushes.entries()].filter(([, count]) => count === 2).map(([bucket]) => bucket);
    expect(changed).toEqual(Array.from({ length: 10 }, (_, i) => base + i * 100));
  }, 60_000);
});
