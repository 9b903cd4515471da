import { afterAll, describe, expect, it } from "vitest";
import { queryRequest } from "../../test/helpers/query-request.js";
import { IsolatePool } from "./isolate-pool.js";
import { evictHeaviestOwnersFirst } from "./owner-eviction.js";

const CODE = `var __platform_capsule = {
  kind: "platform.capsule",
  declaration: { schema: { tables: {} } },
  definition: { queries: { ok: async () => 1 } },
};`;

const pools: IsolatePool[] = [];
afterAll(() => Promise.all(pools.map((pool) => pool.close())));

describe("evictions", () => {
  it("take the least recently used idle runner of the heaviest owner, then weigh again", () => {
    const runner = (name: string, owner: string, weight: number, busy = false) => ({
      name,
      owner,
      weight,
      busy,
      isLive: true,
    });
    // In least recently used order.
    const runners = [
      runner("v1", "victim", 5),
      runner("a1", "a", 3),
      runner("a2", "a", 3, true),
      runner("a3", "a", 3),
      runner("b1", "b", 4),
    ];
    const evicted: string[] = [];
    let total = 18;
    evictHeaviestOwnersFirst(runners, {
      ownerOf: (each) => each.owner,
      weightOf: (each) => each.weight,
      over: () => total > 8,
      evict: (each) => {
        evicted.push(each.name);
        total -= each.weight;
      },
    });
    // a (9) first, then a (6) against victim (5) and b (4); then victim (5) over a's busy 3.
    expect(evicted).toEqual(["a1", "a3", "v1"]);
  });

  it("with a budget, never take an owner within an even share of it, though a heavier one has nothing idle", () => {
    const runners = [
      { name: "v1", owner: "victim", weight: 4, busy: false, isLive: true },
      { name: "a1", owner: "a", weight: 10, busy: true, isLive: true },
      { name: "b1", owner: "b", weight: 1, busy: false, isLive: true },
    ];
    const evicted: string[] = [];
    evictHeaviestOwnersFirst(runners, {
      ownerOf: (each) => each.owner,
      weightOf: (each) => each.weight,
      over: () => true,
      evict: (each) => evicted.push(each.name),
      budget: 15,
    });
    // Even share 5: only a is over it, and its runner is busy.
    expect(evicted).toEqual([]);
  });

  it("a lone owner past the budget is over its share", () => {
    const runners = [
      { name: "a1", owner: "a", weight: 6, busy: false, isLive: true },
      { name: "a2", owner: "a", weight: 6, busy: false, isLive: true },
    ];
    const evicted: string[] = [];
    let total = 12;
    evictHeaviestOwnersFirst(runners, {
      ownerOf: (each) => each.owner,
      weightOf: (each) => each.weight,
      over: () => total > 10,
      evict: (each) => {
        evicted.push(each.name);
        total -= each.weight;
      },
      budget: 10,
    });
    expect(evicted).toEqual(["a1"]);
  });

  it("asked for busy runners, take the heaviest busy one of the owner over its share, and never an idle one", () => {
    const runners = [
      { name: "v1", owner: "victim", weight: 4, busy: true, isLive: true },
      { name: "a1", owner: "a", weight: 2, busy: true, isLive: true },
      { name: "a2", owner: "a", weight: 8, busy: true, isLive: true },
      { name: "a3", owner: "a", weight: 9, busy: false, isLive: true },
    ];
    const evicted: string[] = [];
    let total = 23;
    evictHeaviestOwnersFirst(runners, {
      ownerOf: (each) => each.owner,
      weightOf: (each) => each.weight,
      over: () => total > 12,
      evict: (each) => {
        evicted.push(each.name);
        total -= each.weight;
      },
      budget: 12,
      busy: true,
    });
    // Even share 6: a (19) loses a2 (8), then a1 (2); the victim's 4 is within its share.
    expect(evicted).toEqual(["a2", "a1"]);
  });

  it("past the live isolates' cap, evict the developer with most live isolates before an older tenant", async () => {
    const pool = new IsolatePool(async () => CODE, { spareIsolate: false, maxLive: 4 });
    pools.push(pool);
    const victim = pool.runner("victim", "h", "dev-v");
    await victim.run(queryRequest("ok"), () => null);
    // One developer cycles through many deployments: the victim is the least recently used.
    const cycled = Array.from({ length: 6 }, (_, i) => pool.runner(`c${i}`, "h", "dev-a"));
    for (const runner of cycled) await runner.run(queryRequest("ok"), () => null);
    expect(pool.liveCount()).toBe(4);
    expect(victim.isLive).toBe(true);
    expect(cycled.filter((runner) => runner.isLive)).toHaveLength(3);
  });
});
