/**
 * What live queries hold is bounded, for one handler and for one deployment. A query's gets and
 * scans are counted even when they find nothing (each is a key or range its subscription watches,
 * indexed on the host's main thread), and the subscriptions of one deployment keep at most
 * LIMITS.liveStateBytes of results and read sets: before, 100 subscriptions to an 8 MiB query held
 * 633 MB of the host's memory, and a query reading 15,000 missing keys cost nothing. Real host,
 * real isolates.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_ISOLATE_LIMITS } from "../host/isolates/index.js";
import { LiveQueries } from "../host/live/index.js";
import { type CallUsage, LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, table, number, string } from "platform/server";
export default capsule({
  schema: {
    rows: table({ n: number() }).index("by_n", ["n"]),
    notes: table({ s: string() }).index("by_s", ["s"]),
  },
  queries: {
    big: async (ctx, args) => {
      const row = await ctx.db.rows.withIndex("by_n", (q) => q.eq("n", args.n)).first();
      return (row ? "found " : "") + "x".repeat(args.size);
    },
    longKeys: async (ctx, args) => {
      for (let i = 0; i < args.count; i++) await ctx.db.notes.withIndex("by_s", (q) => q.eq("s", "y".repeat(args.size) + i)).first();
      return args.count;
    },
    misses: async (ctx, args) => {
      for (let i = 0; i < args.gets; i++) await ctx.db.rows.get(String(i).padStart(22, "A"));
      for (let i = 0; i < args.scans; i++) await ctx.db.rows.withIndex("by_n", (q) => q.eq("n", args.from + i)).first();
      return args.gets + args.scans;
    },
  },
  mutations: { add: async (ctx, args) => ctx.db.rows.insert({ n: args.n }) },
});
`;

/** The live state limit of the LiveQueries under test: small, so a test fills it quickly. */
const STATE_BYTES = 1024 * 1024;

let host: TestHost;
let live: LiveQueries;

beforeAll(async () => {
  // About 4,096 reads a call: room for CPU time, so the read budget is what ends them on a busy machine.
  host = await startTestHost({
    pool: { limits: { ...DEFAULT_ISOLATE_LIMITS, cpuMs: 60_000, wallMs: 120_000 } },
  });
  const code = await sourceCode(CAPSULE);
  expect((await host.deployCode("state", code)).status).toBe(201);
  expect((await host.deployCode("neighbour", code)).status).toBe(201);
  live = new LiveQueries(host.deployments, undefined, { deployment: STATE_BYTES });
}, 60_000);
afterAll(async () => {
  live.close();
  await host.dispose();
});

/** Subscribes on `on` to `name` of `deployment` with `args`; the latest outcome is in the returned object. */
async function subscribeOn(
  on: LiveQueries,
  deployment: string,
  name: string,
  args: unknown,
  caller?: string,
) {
  const seen: {
    value?: string | undefined;
    error?: { code: string; message: string } | undefined;
    unsubscribe: () => void;
  } = {
    unsubscribe: () => {},
  };
  seen.unsubscribe = await on.subscribe(deployment, name, JSON.stringify(args), null, {
    value: (json) => {
      seen.value = JSON.parse(json) as string;
      seen.error = undefined;
    },
    error: (error) => {
      seen.error = error;
      seen.value = undefined;
    },
    ...(caller === undefined ? {} : { caller }),
  });
  return seen;
}

/** Subscribes to `name` of the test's deployment with `args`, on the test's live queries. */
const subscribe = (name: string, args: unknown) => subscribeOn(live, "state", name, args);

describe("a handler's gets and scans", () => {
  it("are counted when they find nothing: one more than LIMITS.rangesRead fails with 429", async () => {
    const ok = await host.call("state", "query", "misses", {
      gets: 2048,
      scans: LIMITS.rangesRead - 2048,
      from: 0,
    });
    expect(ok.status, ok.text()).toBe(200);
    for (const [gets, scans] of [
      [LIMITS.rangesRead + 1, 0],
      [0, LIMITS.rangesRead + 1],
      [2048, LIMITS.rangesRead - 2047],
    ]) {
      const over = await host.call("state", "query", "misses", { gets, scans, from: 0 });
      expect(over.status, over.text()).toBe(429);
      expect(over.json<{ error: { code: string; message: string } }>().error).toEqual({
        code: "limit_exceeded",
        message: `Database rangesRead limit exceeded (${LIMITS.rangesRead}).`,
      });
    }
    // The call's figures say so: the log line of the last refused call shows the limit used in full.
    const refused = host.logs
      .map((line) => (line as { call?: { name: string; outcome: string; usage: CallUsage } }).call)
      .filter((call) => call?.name === "misses" && call.outcome === "limit_exceeded");
    expect(refused.at(-1)?.usage).toMatchObject({ rangesRead: LIMITS.rangesRead });
  }, 60_000);

  it("are reported in the call's usage, gets and scans together", async () => {
    const result = await host.deployments.call("state", {
      kind: "query",
      name: "misses",
      argsJson: JSON.stringify({ gets: 3, scans: 2, from: 0 }),
      identity: null,
    });
    expect(result.usage).toMatchObject({ rangesRead: 5, indexScans: 2, rowsRead: 0 });
  });

  it("are counted by the bytes of their bounds too: long compared values fail with 429", async () => {
    const size = 1024 * 1024;
    const ok = await host.call("state", "query", "longKeys", { count: 1, size });
    expect(ok.status, ok.text()).toBe(200);
    // Each range holds the value twice (start and end): the third passes 4 MiB.
    const over = await host.call("state", "query", "longKeys", { count: 3, size });
    expect(over.status, over.text()).toBe(429);
    expect(over.json<{ error: { message: string } }>().error.message).toBe(
      `Database rangeBytesRead limit exceeded (${LIMITS.rangeBytesRead}).`,
    );
  }, 60_000);
});

describe("a deployment's live state", () => {
  it("refuses a result that would take it past its limit, and takes it once room is freed", async () => {
    const size = 400_000;
    const first = await subscribe("big", { n: 1, size });
    const second = await subscribe("big", { n: 2, size });
    const third = await subscribe("big", { n: 3, size });
    expect(first.value?.length).toBe(size);
    expect(second.value?.length).toBe(size);
    expect(third.value).toBeUndefined();
    expect(third.error?.code).toBe("limit_exceeded");
    expect(third.error?.message).toContain(`live queries hold more than ${STATE_BYTES} bytes`);

    // A small subscription leaving frees too little: the refused one does not run for nothing.
    const small = await subscribe("big", { n: 9, size: 10 });
    const runs = live.executions;
    small.unsubscribe();
    await live.settled();
    expect(live.executions).toBe(runs);
    // Refused, it keeps no read set; a write runs it once, in turn (what it reads may have shrunk),
    // and nothing else here (the write touched no other read set).
    await host.call("state", "mutation", "add", { n: 1000 });
    await live.settled();
    expect(live.executions).toBe(runs + 1);
    expect(third.error?.code).toBe("limit_exceeded");
    // Room freed: it runs again at once, and gets its value.
    first.unsubscribe();
    await live.settled();
    expect(live.executions).toBe(runs + 2);
    expect(third.value?.length).toBe(size);
    expect(third.error).toBeUndefined();
    // The others were not disturbed: the write touched neither's read set.
    expect(second.value?.length).toBe(size);
    second.unsubscribe();
    third.unsubscribe();
  }, 60_000);

  it("runs every waiting subscription that fits in the room freed, not only the oldest", async () => {
    const kept = await subscribe("big", { n: 11, size: 600_000 });
    const leaving = await subscribe("big", { n: 12, size: 200_000 });
    const large = await subscribe("big", { n: 13, size: 900_000 });
    const medium = await subscribe("big", { n: 14, size: 300_000 });
    expect([large.error?.code, medium.error?.code]).toEqual(["limit_exceeded", "limit_exceeded"]);
    // 200,000 freed: the medium one fits beside the kept one, the large one (first in line) does not.
    leaving.unsubscribe();
    await live.settled();
    expect(medium.value?.length).toBe(300_000);
    expect(large.error?.code).toBe("limit_exceeded");
    for (const each of [kept, large, medium]) each.unsubscribe();
  }, 60_000);

  it("counts read sets too: wide queries that find nothing fill it as results do", async () => {
    const SCANS = 1024;
    const subscriptions = [];
    for (let i = 0; i < 12; i++) {
      subscriptions.push(await subscribe("misses", { gets: 0, scans: SCANS, from: i * SCANS }));
    }
    const kept = subscriptions.filter((s) => s.value !== undefined).length;
    const refused = subscriptions.filter((s) => s.error?.code === "limit_exceeded").length;
    expect(kept + refused).toBe(12);
    expect(kept).toBeGreaterThan(0);
    // Each watched range counts at least its index entry (224 bytes).
    expect(kept).toBeLessThanOrEqual(Math.floor(STATE_BYTES / (SCANS * 224)));
    for (const subscription of subscriptions) subscription.unsubscribe();
    // All gone: a new one fits again.
    const again = await subscribe("big", { n: 5, size: 400_000 });
    expect(again.value?.length).toBe(400_000);
    again.unsubscribe();
  }, 120_000);
});

describe("a client's share of a deployment's live state", () => {
  const SHARE = 450_000;
  const SIZE = 200_000;

  it("refuses one client's subscriptions past its share, not another client's", async () => {
    const shared = new LiveQueries(host.deployments, undefined, { deployment: STATE_BYTES, caller: SHARE });
    const on = (args: { n: number; size: number }, caller: string) =>
      subscribeOn(shared, "state", "big", args, caller);
    try {
      // Ever new arguments: two fit in the attacker's share, the others are refused.
      const attacker = [];
      for (let i = 0; i < 5; i++) attacker.push(await on({ n: 100 + i, size: SIZE }, "attacker"));
      expect(attacker.map((each) => each.value?.length ?? each.error?.code)).toEqual([
        SIZE,
        SIZE,
        "limit_exceeded",
        "limit_exceeded",
        "limit_exceeded",
      ]);
      expect(attacker[2]?.error?.message).toContain(
        `The live queries each client subscribed to this one started hold more than ${SHARE} bytes`,
      );
      // Another client's own subscription and one it shares with the attacker are answered.
      const own = await on({ n: 200, size: SIZE }, "victim");
      const joined = await on({ n: 100, size: SIZE }, "victim");
      expect([own.value?.length, joined.value?.length]).toEqual([SIZE, SIZE]);
      // Room freed in the deployment but not in the attacker's share runs none of its waiting ones.
      const small = await on({ n: 201, size: 10 }, "victim");
      const runs = shared.executions;
      small.unsubscribe();
      await shared.settled();
      expect(shared.executions).toBe(runs);

      // The attacker leaves: the subscription it shared counts for the victim from now on...
      for (const each of attacker) each.unsubscribe();
      await shared.settled();
      expect(joined.value?.length).toBe(SIZE);
      const again = [
        await on({ n: 110, size: SIZE }, "attacker"),
        await on({ n: 111, size: SIZE }, "attacker"),
      ];
      expect(again.map((each) => each.value?.length)).toEqual([SIZE, SIZE]);
      // ... so the victim's share holds two: a third is refused, with room left in the deployment.
      const third = await on({ n: 202, size: SIZE }, "victim");
      expect(third.error?.code).toBe("limit_exceeded");
      // Once the shared one goes, the victim's waiting subscription runs and fits.
      joined.unsubscribe();
      await shared.settled();
      expect(third.value?.length).toBe(SIZE);
      for (const each of [own, third, ...again]) each.unsubscribe();
    } finally {
      shared.close();
    }
  }, 60_000);

  it("lets another client take on a shared query its starter has no room for", async () => {
    const shared = new LiveQueries(host.deployments, undefined, { deployment: STATE_BYTES, caller: SHARE });
    const on = (args: { n: number; size: number }, caller: string) =>
      subscribeOn(shared, "state", "big", args, caller);
    try {
      // The attacker fills its share, then starts the queries others will subscribe to.
      const filled = [
        await on({ n: 400, size: SIZE }, "attacker"),
        await on({ n: 401, size: SIZE }, "attacker"),
      ];
      expect(filled.map((each) => each.value?.length)).toEqual([SIZE, SIZE]);
      const squatted = await on({ n: 402, size: SIZE }, "attacker");
      expect(squatted.error?.code).toBe("limit_exceeded");
      // A client with room joining it takes it on: both get the value.
      const victim = await on({ n: 402, size: SIZE }, "victim");
      expect(victim.value?.length).toBe(SIZE);
      expect(squatted.value?.length).toBe(SIZE);
      // The victim's share holds it now: two more of its own fit only one.
      const more = [await on({ n: 403, size: SIZE }, "victim"), await on({ n: 404, size: SIZE }, "victim")];
      expect(more.map((each) => each.value?.length ?? each.error?.code)).toEqual([SIZE, "limit_exceeded"]);
      for (const each of [...filled, squatted, victim, ...more]) each.unsubscribe();
    } finally {
      shared.close();
    }
  }, 60_000);
});

describe("the host's live state", () => {
  it("past its limit, lets each deployment grow to its even share of it, no further", async () => {
    const HOST = 700_000;
    const SIZE = 200_000;
    const hosted = new LiveQueries(host.deployments, undefined, {
      deployment: STATE_BYTES,
      caller: STATE_BYTES,
      host: HOST,
    });
    const on = (deployment: string, n: number, size = SIZE) =>
      subscribeOn(hosted, deployment, "big", { n: 300 + n, size });
    try {
      // Alone, a deployment may take the host's whole figure.
      const first = [await on("state", 1), await on("state", 2), await on("state", 3)];
      expect(first.map((each) => each.value?.length)).toEqual([SIZE, SIZE, SIZE]);
      // Past it, another may still grow to its even share (350,000 of two)...
      const neighbour = await on("neighbour", 4);
      expect(neighbour.value?.length).toBe(SIZE);
      const past = await on("neighbour", 5);
      expect(past.error?.code).toBe("limit_exceeded");
      expect(past.error?.message).toContain(`This host's live queries hold more than ${HOST} bytes`);
      // ... and the one past its share may not grow at all.
      const more = await on("state", 6, 1000);
      expect(more.error?.code).toBe("limit_exceeded");
      for (const each of [...first, neighbour, past, more]) each.unsubscribe();
    } finally {
      hosted.close();
    }
  }, 60_000);
});
