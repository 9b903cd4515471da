import { afterAll, describe, expect, it } from "vitest";
import { queryRequest } from "../../test/helpers/query-request.js";
import { DEFAULT_INLINE_POLICY } from "./inline/index.js";
import type { IsolateKeeper } from "./isolate-keeper.js";
import { IsolatePool } from "./isolate-pool.js";
import { DEFAULT_ISOLATE_LIMITS } from "./limits.js";

/** A capsule whose query keeps 8 MB more between calls each time (module state, as a cache would). */
const CODE = `var __platform_capsule = {
  kind: "platform.capsule",
  declaration: { schema: { tables: { items: { fields: {} } } } },
  definition: { queries: {
    keep: async () => { (globalThis.kept ??= []).push(new Array(1e6).fill(1.5)); return globalThis.kept.length; },
    keepThenWait: async (ctx) => { (globalThis.kept ??= []).push(new Array(1e6).fill(1.5), new Array(1e6).fill(2.5)); await ctx.db.items.count(); return globalThis.kept.length; },
    ok: async () => 1,
    spin: async () => { for (;;) {} },
  } },
};`;

const MB = 1024 * 1024;
/** Calls on isolates' own threads, whose heaps are read after every call. */
const THREADED = { spareIsolate: false, inline: { ...DEFAULT_INLINE_POLICY, enabled: false } };
const pools: IsolatePool[] = [];
afterAll(() => Promise.all(pools.map((pool) => pool.close())));

/** Resolves once `check` holds (heaps are read after calls, off their path). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
}

/**
 * Calls of `keepThenWait` whose platform call waits until {@link answerAll}: `holding(runner)`
 * starts one and, once it waits there, answers its outcome to come (boxed: awaited, it would wait
 * for the call).
 */
function heldCalls() {
  const answers: Array<() => void> = [];
  const holding = async (runner: IsolateKeeper) => {
    const waiting = answers.length;
    const outcome = runner
      .run(queryRequest("keepThenWait"), () => new Promise((resolve) => answers.push(() => resolve(0))))
      .then(
        () => "answered",
        (error: { code?: string }) => error.code,
      );
    await until(() => answers.length === waiting + 1);
    return { outcome };
  };
  const answerAll = () => {
    for (const answer of answers.splice(0)) answer();
  };
  return { holding, answerAll };
}

describe("the host's budget of isolates' heaps", () => {
  it("evicts idle isolates past it, the owner holding most first, and keeps the others live", async () => {
    const pool = new IsolatePool(async () => CODE, { ...THREADED, maxHeapBytes: 60 * MB });
    pools.push(pool);
    // Another developer's deployment, light, used before and after.
    const victim = pool.runner("victim", "h", "dev-v");
    await victim.run(queryRequest("ok"), () => null);
    await until(() => victim.heap.bytes > 0);
    // One developer's deployments each keep 16 MB: together past the budget.
    const hogs = Array.from({ length: 5 }, (_, i) => pool.runner(`hog${i}`, "h", "dev-a"));
    for (const hog of hogs) {
      await hog.run(queryRequest("keep"), () => null);
      await hog.run(queryRequest("keep"), () => null);
    }
    await until(() => hogs.some((hog) => !hog.isLive));
    // Only the developer holding most lost isolates; the light tenant's stays live.
    expect(victim.isLive).toBe(true);
    const live = hogs.filter((hog) => hog.isLive);
    expect(live.length).toBeLessThan(hogs.length);
    const held = [victim, ...live].reduce((sum, runner) => sum + runner.heap.bytes, 0);
    expect(held).toBeLessThanOrEqual(60 * MB);
    // An evicted deployment starts again on its next call, its state gone.
    const evicted = hogs.find((hog) => !hog.isLive);
    expect(await evicted?.run(queryRequest("keep"), () => null)).toMatchObject({ ok: true, valueJson: "1" });
  });

  it("evicts a lone developer's idle isolates past it too", async () => {
    const pool = new IsolatePool(async () => CODE, { ...THREADED, maxHeapBytes: 40 * MB });
    pools.push(pool);
    const runners = Array.from({ length: 5 }, (_, i) => pool.runner(`alone${i}`, "h", "dev-a"));
    for (const runner of runners) await runner.run(queryRequest("keep"), () => null);
    await until(() => runners.some((runner) => !runner.isLive));
    await until(() => runners.reduce((sum, runner) => sum + runner.heap.bytes, 0) <= 40 * MB);
  });

  it("stops busy isolates of the developer past an even share when evicting idle ones is not enough", async () => {
    // Held calls outlast no wall-clock limit, however slowly a loaded machine starts the isolates.
    const limits = { ...DEFAULT_ISOLATE_LIMITS, wallMs: 300_000 };
    const pool = new IsolatePool(async () => CODE, { ...THREADED, limits, maxHeapBytes: 60 * MB });
    pools.push(pool);
    const victim = pool.runner("victim", "h", "dev-v");
    await victim.run(queryRequest("ok"), () => null);
    await until(() => victim.heap.bytes > 0);
    // One developer's deployments each keep 16 MB or more and then wait on a platform call that
    // does not answer: always busy, so nothing is idle to evict, and no call ends to read their heaps.
    const answers: Array<() => void> = [];
    const held = () => new Promise<number>((resolve) => answers.push(() => resolve(0)));
    const hogs = Array.from({ length: 5 }, (_, i) => pool.runner(`busy${i}`, "h", "dev-a"));
    let settled = 0;
    const calls = hogs.map((hog) =>
      hog
        .run(queryRequest("keepThenWait"), held)
        .then(
          () => "answered",
          (error: { code?: string }) => error.code,
        )
        .finally(() => settled++),
    );
    // Each call waits on its platform call, or was stopped before it made one.
    await until(() => answers.length + settled === hogs.length);
    await until(() => hogs.some((hog) => !hog.isLive));
    expect(victim.isLive).toBe(true);
    for (const answer of answers) answer();
    const outcomes = await Promise.all(calls);
    expect(outcomes).toContain("out_of_memory");
    expect(outcomes).toContain("answered");
    const live = hogs.filter((hog) => hog.isLive);
    expect([victim, ...live].reduce((sum, runner) => sum + runner.heap.bytes, 0)).toBeLessThanOrEqual(
      60 * MB,
    );
    expect(await victim.run(queryRequest("ok"), () => null)).toMatchObject({ ok: true });
  });

  it("evicts nothing while the heaps fit", async () => {
    const pool = new IsolatePool(async () => CODE, { ...THREADED, maxHeapBytes: 1024 * MB });
    pools.push(pool);
    const runners = Array.from({ length: 3 }, (_, i) => pool.runner(`fits${i}`, "h", "dev-a"));
    for (const runner of runners) await runner.run(queryRequest("keep"), () => null);
    await until(() => runners.every((runner) => runner.heap.bytes > 8 * MB));
    expect(runners.every((runner) => runner.isLive)).toBe(true);
  });

  it("reads the heap of an isolate whose calls run inline too, at most once a second", async () => {
    const pool = new IsolatePool(async () => CODE, { spareIsolate: false });
    pools.push(pool);
    const runner = pool.runner("inline", "h", "dev-a");
    const answer = await runner.run(queryRequest("ok"), () => null);
    expect(answer.onOwnThread).toBe(false);
    await until(() => runner.heap.bytes > 0);
  });

  it("stops counting an isolate stopped for its limit", async () => {
    const pool = new IsolatePool(async () => CODE, THREADED);
    pools.push(pool);
    const runner = pool.runner("stopped", "h", "dev-a");
    await runner.run(queryRequest("keep"), () => null);
    await until(() => runner.heap.bytes > 8 * MB);
    await expect(runner.run(queryRequest("spin"), () => null)).rejects.toMatchObject({ code: "timeout" });
    expect(runner.isLive).toBe(false);
    expect(runner.heap.bytes).toBe(0);
  });

  it("counts an isolate a redeploy replaced while a call still ran in it, for its memory limit, until the call ends", async () => {
    const pool = new IsolatePool(async () => CODE, { ...THREADED, maxHeapBytes: 1024 * MB });
    pools.push(pool);
    const limit = DEFAULT_ISOLATE_LIMITS.memoryMb * MB;
    const runner = pool.runner("redeployed", "h1", "dev-a");
    const answers: Array<() => void> = [];
    const held = runner.run(
      queryRequest("keepThenWait"),
      () => new Promise((resolve) => answers.push(() => resolve(0))),
    );
    await until(() => answers.length === 1);
    // Redeployed: the next call starts the new artifact's isolate, and the old one drains.
    pool.runner("redeployed", "h2", "dev-a");
    expect(await runner.run(queryRequest("ok"), () => null)).toMatchObject({ ok: true });
    expect(runner.heap.bytes).toBeGreaterThanOrEqual(limit);
    for (const answer of answers) answer();
    expect(await held).toMatchObject({ ok: true, valueJson: "2" });
    expect(runner.heap.bytes).toBeLessThan(limit);
    expect(runner.heap.bytes).toBe(runner.heap.liveBytes);
  });

  it("stops an isolate draining past the budget before another developer's busy isolate, and counts no breach for it", async () => {
    const limits = { ...DEFAULT_ISOLATE_LIMITS, wallMs: 300_000 };
    const pool = new IsolatePool(async () => CODE, { ...THREADED, limits, maxHeapBytes: 100 * MB });
    pools.push(pool);
    const { holding, answerAll } = heldCalls();
    const victim = pool.runner("victim", "h", "dev-v");
    await victim.run(queryRequest("keep"), () => null);
    await until(() => victim.heap.bytes > 8 * MB);
    // Another developer's deployment, busy, past an even share of the budget (a third of it).
    const busy = pool.runner("busy", "h", "dev-b");
    for (let i = 0; i < 3; i++) await busy.run(queryRequest("keep"), () => null);
    const { outcome: busyCall } = await holding(busy);
    await until(() => busy.heap.bytes > 36 * MB);
    const runner = pool.runner("redeployer", "h1", "dev-a");
    const { outcome: drainingCall } = await holding(runner);
    pool.runner("redeployer", "h2", "dev-a");
    // The draining isolate's memory limit takes the heaps past the budget: it goes, alone.
    expect(await runner.run(queryRequest("ok"), () => null)).toMatchObject({ ok: true });
    answerAll();
    expect(await drainingCall).toBe("out_of_memory");
    expect(await busyCall).toBe("answered");
    expect(runner.heap.bytes).toBe(runner.heap.liveBytes);
    expect(victim.isLive).toBe(true);
    // Not a breach of the redeployed deployment: its next calls run (two stops in a row pause it).
    expect(await runner.run(queryRequest("ok"), () => null)).toMatchObject({ ok: true });
  });

  it("counts one stop when the host's memory stops a deployment's live isolate and the one draining", async () => {
    const limits = { ...DEFAULT_ISOLATE_LIMITS, wallMs: 300_000 };
    const pool = new IsolatePool(async () => CODE, { ...THREADED, limits, maxHeapBytes: 200 * MB });
    pools.push(pool);
    const { holding, answerAll } = heldCalls();
    const runner = pool.runner("twice", "h1", "dev-a");
    const { outcome: draining } = await holding(runner);
    pool.runner("twice", "h2", "dev-a");
    // The new artifact's isolate starts for this call, the old one drains: both busy, under the budget.
    const { outcome: live } = await holding(runner);
    await until(() => runner.heap.liveBytes > 16 * MB);
    // Another developer's deployment grows until the heaps are past the budget: both of dev-a's go.
    const victim = pool.runner("grower", "h", "dev-v");
    for (let i = 0; i < 10 && runner.busy; i++) await victim.run(queryRequest("keep"), () => null);
    // The grower's last reading may come after its call returns, and the stops with it.
    await until(() => !runner.busy);
    answerAll();
    expect([await draining, await live]).toEqual(["out_of_memory", "out_of_memory"]);
    expect(victim.isLive).toBe(true);
    // One stop: not paused (two in a row would pause it).
    expect(await runner.run(queryRequest("ok"), () => null)).toMatchObject({ ok: true });
  });
});
