/**
 * Fair scheduling across tenants, over real HTTP on loopback with real isolates: a good tenant's
 * trivial query keeps answering while one tenant floods the host with calls that never settle,
 * while 20 hostile tenants spin, allocate and hang at once, while 20 tenants run handlers that take
 * a few milliseconds each, and while 20 tenants churn memory, all within every limit. Nothing here
 * is timed: what is checked is what was answered, and when relative to the others' answers. The
 * good tenant's latency under each attack against alone is bench/fairness's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpResponse } from "../cli/http.js";
import { DEFAULT_ISOLATE_LIMITS } from "../host/isolates/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import {
  type Answered,
  type Attacker,
  type AttackTarget,
  answeredBetween,
  hostileTargets,
  loopingTargets,
  startAttacker,
} from "./helpers/attacker-process.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

/** Sequential calls of the good tenant measured per attack. */
const SAMPLES = 150;
/**
 * How many calls of the hostile tenants may end, all of them together, per call of the good tenant:
 * fewer than one. Their spinning and allocating calls end at the CPU or memory limit; a
 * good call that waited behind one would wait for its end. Not free of speed: a spinning call ends
 * after a second of CPU, so this bounds a good call's mean latency at roughly the time between two
 * of their ends (hundreds of milliseconds on 2 cores). Seen on 2 cores: 0.01-0.10 quiet, 0.02-0.09
 * beside a CPU hog per core.
 */
const OTHERS_PER_GOOD_CALL = 1;

let host: TestHost;
let attacker: Attacker | undefined;
const pending: Array<Promise<unknown>> = [];

function p99(samples: number[]): number {
  const sorted = samples.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] as number;
}

/** The good tenant's latency over {@link SAMPLES} sequential queries; each must succeed. */
async function goodLatencies(): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    const response = await host.call("good", "query", "ok");
    samples.push(performance.now() - started);
    expect(response.status, response.text()).toBe(200);
  }
  return samples;
}

/** A call that is never awaited by the test (it may hang until the host closes). */
function fire(id: string, name: string): Promise<HttpResponse | null> {
  const call = host.call(id, "query", name).catch(() => null);
  pending.push(call);
  return call;
}

/**
 * Sends `calls` calls that never settle to `id` at once. Its lane holds the first
 * `deploymentCallsInFlight + deploymentQueuedCalls`; resolves when every other call has been
 * refused (at once), with those refusals and a count of every answer so far, held calls included.
 */
function flood(id: string, calls: number): Promise<{ refused: HttpResponse[]; answers: () => number }> {
  const refusals = calls - LIMITS.deploymentCallsInFlight - LIMITS.deploymentQueuedCalls;
  const refused: HttpResponse[] = [];
  let answers = 0;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`${refused.length} of the ${refusals} calls beyond the queue came back in 30 s`)),
      30_000,
    );
    for (let i = 0; i < calls; i++) {
      void fire(id, "hang").then((response) => {
        answers++;
        if (response === null || refused.push(response) < refusals) return;
        clearTimeout(timer);
        resolve({ refused, answers: () => answers });
      });
    }
  });
}

/** Starts the attack on `targets` against this test's host (see helpers/attacker-process.ts). */
async function attack(targets: AttackTarget[]): Promise<void> {
  attacker = await startAttacker(
    Object.fromEntries(targets.map(({ id }) => [id, host.deploymentUrl(id)])),
    targets,
  );
}

/**
 * The good tenant's latencies over {@link SAMPLES} calls, what the attacker had answered meanwhile, and
 * everything it had answered since it started.
 */
async function goodCallsUnderAttack(): Promise<{ latencies: number[]; answered: Answered; all: Answered }> {
  const running = attacker as Attacker;
  const before = await running.answered();
  const latencies = await goodLatencies();
  const all = await running.answered();
  running.kill();
  return { latencies, answered: answeredBetween(before, all), all };
}

/** How many calls of the deployments whose ids start with `prefix` were answered, by status. */
function answersOf(answered: Answered, prefix: string): Record<string, number> {
  const total: Record<string, number> = {};
  for (const [id, byStatus] of Object.entries(answered)) {
    if (!id.startsWith(prefix)) continue;
    for (const [status, count] of Object.entries(byStatus)) total[status] = (total[status] ?? 0) + count;
  }
  return total;
}

const sum = (byStatus: Record<string, number>): number => Object.values(byStatus).reduce((a, b) => a + b, 0);

/**
 * Prints how many of the others' calls were answered per call of the good tenant, with the good
 * tenant's p99, for reading (targets are in bench/fairness), and returns that count.
 */
function othersPerGoodCall(what: string, latencies: number[], others: Record<string, number>): number {
  const perGoodCall = sum(others) / latencies.length;
  console.log(
    `${what}: ${perGoodCall.toFixed(2)} of their calls answered per good call ${JSON.stringify(others)}; good p99 ${p99(latencies).toFixed(1)} ms`,
  );
  return perGoodCall;
}

/**
 * Keeps four calls of query `name` in flight for each of the 20 tenants `<prefix>0` to
 * `<prefix>19` (see {@link attack}) while the good tenant makes its calls, and checks that every
 * one of their calls answered since the attack started (at least one each: see `startAttacker`)
 * succeeded: beside CPU hogs, none may end while the good tenant's calls run.
 */
async function expectAllAnsweredWhileLooping(prefix: string, name: string, what: string): Promise<void> {
  await attack(loopingTargets(prefix, name));
  const { latencies, answered, all } = await goodCallsUnderAttack();
  othersPerGoodCall(`20 ${name} tenants`, latencies, answersOf(answered, prefix));
  const theirs = answersOf(all, prefix);
  expect(Object.keys(theirs), what).toEqual(["200"]);
  expect(theirs["200"]).toBeGreaterThanOrEqual(20);
}

describe("fair scheduling between tenants", () => {
  beforeAll(async () => {
    const code = await fixtureCode("fairness");
    // Held calls stay held until the host closes, however long the measurements take.
    host = await startTestHost({ pool: { limits: { ...DEFAULT_ISOLATE_LIMITS, wallMs: 30 * 60_000 } } });
    const ids = [
      "good",
      "flooded",
      ...Array.from({ length: 20 }, (_, i) => `hostile${i}`),
      ...Array.from({ length: 20 }, (_, i) => `busy${i}`),
      ...Array.from({ length: 20 }, (_, i) => `churner${i}`),
    ];
    for (const id of ids) expect((await host.deployCode(id, code)).status).toBe(201);
    for (let i = 0; i < 20; i++) await host.call("good", "query", "ok");
  }, 120_000);

  afterAll(async () => {
    attacker?.kill();
    await host.dispose();
    await Promise.all(pending);
  });

  it("300 never-settling calls to one tenant neither hold the host nor queue another tenant behind them", async () => {
    // The flooded deployment's queue is bounded: the calls beyond it are refused at once, which
    // also shows that every call of the flood has reached the host.
    const { refused, answers } = await flood("flooded", 300);
    for (const response of refused) {
      expect(response.status, response.text()).toBe(503);
      const error = response.json<{ error: { code: string; message: string } }>().error;
      expect(error.code).toBe("unavailable");
      expect(error.message).toContain("busy");
      expect(Number(response.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }

    await goodLatencies();
    // Every good call was answered while every held call was still held: none waited for them.
    expect(answers()).toBe(refused.length);
  }, 120_000);

  it("20 hostile tenants spinning, allocating and hanging at once do not starve a good one", async () => {
    await attack(hostileTargets("hostile"));
    const { latencies, answered } = await goodCallsUnderAttack();
    // A spinning call ends at the CPU limit, an allocating one at the memory limit: a good call
    // that waited behind one would wait for its end.
    // Refusals (503: busy or paused) come back at once without running anything; they are not counted.
    const { 503: refusals = 0, ...ran } = answersOf(answered, "hostile");
    console.log(`20 hostile tenants: ${refusals} calls refused`);
    expect(othersPerGoodCall("20 hostile tenants", latencies, ran)).toBeLessThan(OTHERS_PER_GOOD_CALL);
  }, 240_000);

  it("20 tenants whose handlers take a few milliseconds each, within every limit, are all answered beside a good tenant", async () => {
    // Each call parses JSON for several milliseconds (a builtin: as fast before the handler is
    // optimised as after), well under an inline slice, so none is stopped; that they leave the main
    // thread for their own threads is test/inline.test.ts's, what it costs the good tenant
    // bench/fairness's (counting answers cannot tell: beside CPU hogs, 0.03-0.59 of theirs per good
    // call on their threads, about 1 with every handler forced inline).
    await expectAllAnsweredWhileLooping("busy", "busy", "every busy call within its limits succeeds");
  }, 240_000);

  it("20 tenants churning memory just under their limit are all answered beside a good tenant", async () => {
    // Each call maps and frees about 56 MiB of large objects on its isolate's thread: V8 maps and
    // unmaps each one, under the process's memory-map lock, which the main thread needs too. How
    // long the main thread waits for that lock depends on the machine's load (beside CPU hogs the
    // good tenant's p99 reached 1.6 s once): bench/fairness measures it.
    await expectAllAnsweredWhileLooping(
      "churner",
      "churn",
      "every churning call stays under its memory limit",
    );
  }, 240_000);
});
