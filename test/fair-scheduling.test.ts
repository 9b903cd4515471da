/**
 * Fair scheduling across tenants, over real HTTP on loopback with real isolates: a good tenant's
 * trivial query keeps answering while one tenant floods the host with calls that never settle,
 * while 20 hostile tenants spin, allocate and hang at once, and while 20 tenants run handlers that
 * take a few milliseconds each, within every limit. Its p99 under attack is compared with its p99
 * alone, measured in the same test, so the bound holds on a busy shared machine.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { setPriority } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpResponse } from "../cli/http.js";
import { mainThreadRaise } from "../host/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, table, number } from "platform/server";
export default capsule({
  schema: { items: table({ n: number() }) },
  queries: {
    ok: async (ctx) => ctx.db.items.count(),
    hang: async () => new Promise(() => {}),
    spin: async () => { for (;;) {} },
    alloc: async () => { const kept = []; for (;;) kept.push(new Array(1e5).fill(kept.length)); },
    // About 56 MiB of large arrays kept until it returns: under half the 128 MiB heap, so the
    // deployment is never held to the breached slots (docs/security.md "Scheduling").
    churn: async () => { const kept = []; for (let i = 0; i < 70; i++) kept.push(new Array(1e5).fill(i)); return kept.length; },
    busy: async () => {
      const text = "[" + "1,".repeat(1e5) + "1]";
      let n = 0;
      for (let i = 0; i < 4; i++) n += JSON.parse(text).length;
      return n;
    },
  },
});
`;

/** Sequential calls of the good tenant measured per phase. */
const SAMPLES = 150;
/**
 * The attack's p99 may be 10x the alone p99, but never has to beat a floor (ms): the machine has
 * 2 cores shared with other work, and an alone p99 of a few ms makes 10x a matter of one unlucky
 * descheduling. The host raises its main thread above isolates' threads where the process may
 * (host/isolates/thread-priority.ts; as root here). Figures seen on a 2-core machine (good
 * tenant's p99, alone then under attack), raised:
 * - quiet: alone 1.6-6.2 ms; flood 2.5-21.3 ms; 20 hostile tenants 7.0-12.1 ms;
 * - beside a CPU hog per core: alone 5.9-6.3 ms; flood 6.5-9.6 ms; hostile 7.9-9.6 ms.
 * Not raised, the main thread waited for a core behind the spinning tenants' threads several
 * milliseconds at a time: quiet, hostile 5.5-38 ms (over 10x the alone p99 in about half the
 * runs); beside the hogs 8.9-88 ms. Before breached deployments shared two slots, 20 hostile
 * tenants gave 7-85 ms quiet and 38-131 ms beside the hogs (the main thread waited for the
 * kernel's memory-map lock, held by preempted low-priority isolate threads), and measuring while
 * this process still read the flood's refusals gave about 10x.
 */
const FLOOR_MS = 50;
/** The floor where the process may not raise its main thread (ms). */
const UNRAISED_FLOOR_MS = 250;
/**
 * The floor for tenants churning memory (ms): their threads and the main thread take the
 * process's memory-map lock in turns, which raising the main thread does not shorten. Figures:
 * quiet 4.5-17.9 ms raised; beside the hogs 22-66 ms raised, 55-124 ms in full suite runs not
 * raised; 209 and 493 ms with isolates' threads at nice 10 (the default before), 11-55 ms at the
 * host's priority.
 */
const CHURN_FLOOR_MS = 250;
/**
 * The floor for tenants busy on their isolates' threads (ms). 20 busy tenants (a few ms per call
 * on their threads): quiet 6.8-16.4 ms; beside the hogs 9-905 ms before the run tokens
 * (host/isolates/thread-tokens.ts), and with them 6.6-15.8 ms in fifteen windows and three
 * full suite runs, but 436.7 and 317.5 ms in the next two: a good tenant moved to its thread
 * waited for busy tenants' tokens. With the spare token for light lanes, 7-72 ms in 34 of 35
 * windows beside the hogs and 208 ms in one; with the sentinel stopping entries for their CPU
 * too, 5-24 ms in 29 of 31 windows, 107 and 517 ms in the others; the main thread still waits for the memory-map lock now and then
 * (docs/security.md "Scheduling").
 */
const BUSY_FLOOR_MS = 1000;

let host: TestHost;
let attacker: ChildProcess | undefined;
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

/**
 * Prints the good tenant's p99 under `what` against its p99 alone, and checks it is under 10x that
 * or under `floorMs` (by default {@link FLOOR_MS}, or {@link UNRAISED_FLOOR_MS} where the main
 * thread could not be raised).
 */
function expectBounded(aloneP99: number, what: string, underP99: number, floorMs?: number): void {
  const floor = floorMs ?? (mainThreadRaise().raised > 0 ? FLOOR_MS : UNRAISED_FLOOR_MS);
  const bound = Math.max(10 * aloneP99, floor);
  console.log(
    `good tenant p99: alone ${aloneP99.toFixed(1)} ms, ${what} ${underP99.toFixed(1)} ms (bound ${bound.toFixed(0)} ms)`,
  );
  expect(underP99).toBeLessThan(bound);
}

/** A call that is never awaited by the test (it may hang until the host closes). */
function fire(id: string, name: string): Promise<HttpResponse | null> {
  const call = host.call(id, "query", name).catch(() => null);
  pending.push(call);
  return call;
}

/**
 * Sends `calls` calls that never settle to `id` at once. Its lane holds the first
 * `deploymentCallsInFlight + deploymentQueuedCalls`; resolves with the answers to the others (each
 * refused at once) when all of them have come back, so that measuring afterwards times the host
 * holding the flood, not this process still sending it and reading the refusals.
 */
function flood(id: string, calls: number): Promise<HttpResponse[]> {
  const refusals = calls - LIMITS.deploymentCallsInFlight - LIMITS.deploymentQueuedCalls;
  const refused: HttpResponse[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`${refused.length} of the ${refusals} calls beyond the queue came back in 30 s`)),
      30_000,
    );
    for (let i = 0; i < calls; i++) {
      void fire(id, "hang").then((response) => {
        // The held calls answer only at the wall-clock limit, after this has resolved.
        if (response === null || refused.push(response) < refusals) return;
        clearTimeout(timer);
        resolve(refused);
      });
    }
  });
}

/**
 * Starts the attack on `targets` (see helpers/attacker.ts) from a process of its own, as an
 * attacker's traffic would come: the host's main thread pays for answering it, not for sending it.
 * Resolves once every looping tenant has had a call answered and every flooding tenant's queue is
 * full: the attack is in full swing.
 */
async function startAttacker(targets: Array<{ id: string; name: string; mode: string; calls: number }>) {
  const urls = Object.fromEntries(targets.map(({ id }) => [id, host.deploymentUrl(id)]));
  const started = spawn(
    process.execPath,
    ["--import", "tsx", "test/helpers/attacker.ts", JSON.stringify({ urls, targets })],
    // Its stdin is a pipe from this process: it ends itself when this process dies.
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  attacker = started;
  // At the lowest priority: a real attacker's CPU is on machines of their own, not on the host's
  // 2 cores. It still sends as fast as it gets answers whenever a core is free.
  if (process.platform === "linux" && started.pid !== undefined) setPriority(started.pid, 19);
  const stdout = started.stdout as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) resolve();
    });
    started.once("exit", (code) => reject(new Error(`the attacker exited (${code}) before it was ready`)));
  });
}

/**
 * The good tenant's p99 while the 20 tenants `<prefix>0` to `<prefix>19` each keep four calls of
 * query `name` in flight (see {@link startAttacker}).
 */
async function p99WhileLooping(prefix: string, name: string): Promise<number> {
  await startAttacker(
    Array.from({ length: 20 }, (_, i) => ({ id: `${prefix}${i}`, name, mode: "loop", calls: 4 })),
  );
  const under = p99(await goodLatencies());
  attacker?.kill("SIGKILL");
  return under;
}

describe("fair scheduling between tenants", () => {
  let aloneP99 = 0;

  beforeAll(async () => {
    const code = await sourceCode(CAPSULE);
    host = await startTestHost();
    const ids = [
      "good",
      "flooded",
      ...Array.from({ length: 20 }, (_, i) => `hostile${i}`),
      ...Array.from({ length: 20 }, (_, i) => `busy${i}`),
      ...Array.from({ length: 20 }, (_, i) => `churner${i}`),
    ];
    for (const id of ids) expect((await host.deployCode(id, code)).status).toBe(201);
    for (let i = 0; i < 20; i++) await host.call("good", "query", "ok");
    aloneP99 = p99(await goodLatencies());
  }, 120_000);

  afterAll(async () => {
    attacker?.kill("SIGKILL");
    await host.dispose();
    await Promise.all(pending);
  });

  it("300 never-settling calls to one tenant neither hold the host nor slow another tenant", async () => {
    // The flooded deployment's queue is bounded: the calls beyond it are refused at once, which
    // also shows that every call of the flood has reached the host.
    const refused = await flood("flooded", 300);
    for (const response of refused) {
      expect(response.status, response.text()).toBe(503);
      const error = response.json<{ error: { code: string; message: string } }>().error;
      expect(error.code).toBe("unavailable");
      expect(error.message).toContain("busy");
      expect(Number(response.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }

    const underFlood = p99(await goodLatencies());
    expectBounded(aloneP99, "under 300 hanging calls", underFlood);
  }, 120_000);

  it("20 hostile tenants spinning, allocating and hanging at once do not starve a good one", async () => {
    const targets = Array.from({ length: 20 }, (_, i) => {
      const name = ["spin", "alloc", "hang"][i % 3] as string;
      return name === "hang"
        ? {
            id: `hostile${i}`,
            name,
            mode: "flood",
            calls: LIMITS.deploymentCallsInFlight + LIMITS.deploymentQueuedCalls + 8,
          }
        : { id: `hostile${i}`, name, mode: "loop", calls: 4 };
    });
    await startAttacker(targets);
    const underAttack = p99(await goodLatencies());
    attacker?.kill("SIGKILL");
    expectBounded(aloneP99, `with ${targets.length} hostile tenants`, underAttack);
  }, 240_000);

  it("20 tenants whose handlers take a few milliseconds each, within every limit, do not hold the main thread", async () => {
    // Each call parses JSON for several milliseconds (a builtin: as fast before the handler is
    // optimised as after), well under an inline slice. Inline, each would hold the host's main
    // thread that long, and the good tenant's request would wait for every one queued in its turn.
    const underLoad = await p99WhileLooping("busy", "busy");
    expectBounded(aloneP99, "with 20 busy tenants", underLoad, BUSY_FLOOR_MS);
  }, 240_000);

  it("20 tenants churning memory just under their limit do not stall the host", async () => {
    // Each call maps and frees about 56 MiB of large objects on its isolate's thread: V8 maps and
    // unmaps each one, under the process's memory-map lock, which the main thread needs too.
    const underChurn = await p99WhileLooping("churner", "churn");
    expectBounded(aloneP99, "with 20 tenants churning memory", underChurn, CHURN_FLOOR_MS);
  }, 240_000);
});
