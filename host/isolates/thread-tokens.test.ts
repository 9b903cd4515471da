/**
 * The host's run tokens for isolates' own threads: first on isolates whose clock the test moves
 * (what each rule decides), then on real isolates (how many isolates' threads run at once).
 */
import { readdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { DispatchRequest } from "../../sdk/protocol/index.js";
import { CapsuleIsolate } from "./capsule-isolate.js";
import { DEFAULT_INLINE_POLICY, InlineStanding } from "./inline/index.js";
import { DEFAULT_ISOLATE_LIMITS } from "./limits.js";
import type { ThreadLane, TokenIsolate } from "./thread-lane.js";
import { ThreadTokens } from "./thread-tokens.js";

/** An isolate whose clock moves on every read while it "runs", as isolated-vm's does. */
class FakeIsolate implements TokenIsolate {
  isDisposed = false;
  running = false;
  private clock = 1000n;
  get cpuTime(): bigint {
    if (this.running) this.clock += 1000n;
    return this.clock;
  }
  /** Runs for `ns` and stops. */
  ran(ns = 1000n): void {
    this.clock += ns;
    this.running = false;
  }
}

const TURN_NS = 50_000_000n;
const SPARE_TURN_NS = 4_000_000n;

/** Tokens whose lanes never wait long enough to go ahead for it, unless `starvedMs` says. */
function tokens(count = 2, shared = () => 0n, spareTurnNs = 0n, starvedMs = 60_000): ThreadTokens {
  return new ThreadTokens(count, TURN_NS, shared, spareTurnNs, starvedMs);
}

/** Resolves once `check` holds (the tokens settle at the end of the host's turn or on a 1 ms poll). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  expect(check()).toBe(true);
}

/** A lane with work handed over at once (it took a token): returns what was handed over. */
function started(pool: ThreadTokens, isolate: FakeIsolate): { lane: ThreadLane; handed: string[] } {
  const lane = pool.lane(isolate);
  const handed: string[] = [];
  lane.post(() => {
    handed.push("start");
    isolate.running = true;
  });
  return { lane, handed };
}

describe("run tokens", () => {
  it("hands work over at once while tokens are free, and makes the next lane wait", () => {
    const pool = tokens(2);
    const [a, b, c] = [new FakeIsolate(), new FakeIsolate(), new FakeIsolate()];
    expect(started(pool, a).handed).toEqual(["start"]);
    expect(started(pool, b).handed).toEqual(["start"]);
    const third = started(pool, c);
    expect(third.handed).toEqual([]);
    expect(pool.held).toBe(2);
    expect(pool.waitingLanes).toBe(1);
    third.lane.close();
    expect(third.handed).toEqual(["start"]);
  });

  it("takes a token back once its isolate ran what it was handed and stopped, not before", async () => {
    const pool = tokens(1);
    const a = new FakeIsolate();
    const first = started(pool, a);
    // Handed over but not yet run: its clock has not moved, yet it is not idle.
    a.running = false;
    const b = new FakeIsolate();
    const second = started(pool, b);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(second.handed).toEqual([]);
    // It runs and stops: the token goes to the lane waiting.
    a.ran();
    first.lane.yielded();
    await until(() => second.handed.length === 1);
    expect(first.lane.holding).toBe(false);
    expect(second.lane.holding).toBe(true);
  });

  it("keeps the token of an isolate that computes on after its platform call, until its turn is used up", async () => {
    let shared = 0n;
    const pool = tokens(1, () => shared);
    const a = new FakeIsolate();
    const first = started(pool, a);
    first.lane.yielded(); // it made a platform call, and keeps running
    const second = started(pool, new FakeIsolate());
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(second.handed).toEqual([]);
    // Its CPU since it took the token passes the turn, on both clocks: it runs on without one.
    shared = TURN_NS + 1n;
    a.ran(TURN_NS);
    a.running = true;
    await until(() => second.handed.length === 1);
    expect(first.lane.holding).toBe(false);
  });

  it("hands a holder its new work at once within its turn, and makes it wait past it", async () => {
    let shared = 0n;
    const pool = tokens(1, () => shared);
    const a = new FakeIsolate();
    const first = started(pool, a);
    const b = new FakeIsolate();
    const second = started(pool, b);
    // Its isolate is on its thread already: more work there needs no other thread.
    first.lane.post(() => first.handed.push("answer"));
    expect(first.handed).toEqual(["start", "answer"]);
    // Past its turn it waits like any other lane, behind the one that has not run lately.
    shared = TURN_NS + 1n;
    a.ran(TURN_NS + 1n);
    a.running = true;
    first.lane.post(() => first.handed.push("more"));
    await until(() => second.handed.length === 1);
    expect(first.handed).toEqual(["start", "answer"]);
    a.running = false;
    b.ran();
    second.lane.yielded();
    await until(() => first.handed.length === 3);
  });

  /**
   * A lane that ran 30 ms on the only token lately, waiting with new work behind another lane that
   * holds it now.
   */
  async function heavyWaiting(pool: ThreadTokens) {
    const heavy = new FakeIsolate();
    const holder = new FakeIsolate();
    const h = started(pool, heavy);
    heavy.ran(30_000_000n);
    const blocker = started(pool, holder);
    await until(() => blocker.handed.length === 1);
    h.lane.post(() => h.handed.push("again"));
    return { heavy, h, holder };
  }

  it("gives a free token to the lane whose isolate used the least CPU on tokens lately", async () => {
    const pool = tokens(1);
    const light = new FakeIsolate();
    // Both wait; the heavy one asked first.
    const { h, holder } = await heavyWaiting(pool);
    const l = started(pool, light);
    holder.ran();
    await until(() => l.handed.length === 1);
    expect(h.handed).toEqual(["start"]);
  });

  it("gives a free token to a lane that waited long before those that used less lately", async () => {
    const pool = tokens(1, () => 0n, 0n, 20);
    const light = new FakeIsolate();
    const { heavy, h, holder } = await heavyWaiting(pool);
    // The heavy lane has waited past its limit when a lighter one comes: it goes first.
    await new Promise((resolve) => setTimeout(resolve, 40));
    const l = started(pool, light);
    holder.ran();
    await until(() => h.handed.length === 2);
    expect(l.handed).toEqual([]);
    heavy.ran();
    await until(() => l.handed.length === 1);
  });

  it("on a saturated host, alternates the longest waiting lane with the least used: a light one is not last", async () => {
    const pool = tokens(1, () => 0n, 0n, 20);
    const heavies = [new FakeIsolate(), new FakeIsolate()];
    const lanes = heavies.map((heavy) => started(pool, heavy));
    for (const [i, heavy] of heavies.entries()) {
      await until(() => (lanes[i]?.handed.length ?? 0) === 1);
      heavy.ran(30_000_000n);
    }
    const holder = new FakeIsolate();
    const blocker = started(pool, holder);
    await until(() => blocker.handed.length === 1);
    const granted: string[] = [];
    for (const [i, lane] of lanes.entries()) lane.lane.post(() => granted.push(`heavy${i}`));
    // Both heavy lanes have waited past the limit when a light one comes.
    await new Promise((resolve) => setTimeout(resolve, 40));
    const light = new FakeIsolate();
    const l = started(pool, light);
    holder.ran();
    const isolates: Record<string, FakeIsolate> = {
      heavy0: heavies[0] as FakeIsolate,
      heavy1: heavies[1] as FakeIsolate,
    };
    for (let grant = 0; grant < 3; grant++) {
      await until(() => granted.length + l.handed.length === grant + 1);
      const last = l.handed.length > 0 && !granted.includes("light") ? "light" : (granted.at(-1) as string);
      if (last === "light") granted.push("light");
      (isolates[last] ?? light).ran();
    }
    // Taking every lane that waited long first, in turn, left the light one behind both heavy ones.
    expect(granted.indexOf("light")).toBeLessThan(2);
  });

  it("takes the token back from a lane whose work found nothing left to hand over", async () => {
    const pool = tokens(1);
    const first = pool.lane(new FakeIsolate());
    // Its only work was a start whose execution failed while it waited: nothing ran.
    first.post(() => false);
    expect(first.holding).toBe(true);
    const second = started(pool, new FakeIsolate());
    await until(() => second.handed.length === 1);
    expect(first.holding).toBe(false);
  });

  it("frees the token of an isolate that is gone, and hands what waited to nothing", async () => {
    const pool = tokens(1);
    const a = new FakeIsolate();
    const first = started(pool, a);
    first.lane.post(() => first.handed.push("answer"));
    const second = started(pool, new FakeIsolate());
    a.isDisposed = true;
    await until(() => second.handed.length === 1);
    first.lane.close();
    expect(first.handed).toEqual(["start", "answer"]);
  });
});

describe("the spare run token", () => {
  it("goes to a light lane while the tokens are all held, never to a lane whose turns were heavy", async () => {
    const pool = tokens(1, () => 0n, SPARE_TURN_NS);
    const heavy = new FakeIsolate();
    const heavyRun = started(pool, heavy);
    // A fresh lane is taken for light: it gets the spare at once.
    const first = new FakeIsolate();
    const firstRun = started(pool, first);
    expect(firstRun.handed).toEqual(["start"]);
    expect(pool.held).toBe(2);
    // Both held: the next lane waits.
    const third = new FakeIsolate();
    const thirdRun = started(pool, third);
    expect(thirdRun.handed).toEqual([]);
    // The heavy isolate ran 10 ms and stopped: its token goes to the lane waiting.
    heavy.ran(10_000_000n);
    heavyRun.lane.yielded();
    await until(() => thirdRun.handed.length === 1);
    // (The fake clock moves a microsecond on each read while its isolate runs.)
    expect(Math.round(heavyRun.lane.averageTurnNs / 1e6)).toBe(10);
    // The light one ran 0.1 ms. The heavy lane's new work does not get the spare it gives back.
    first.ran(100_000n);
    heavyRun.lane.post(() => heavyRun.handed.push("again"));
    await until(() => !firstRun.lane.holding);
    expect(Math.round(firstRun.lane.averageTurnNs / 1e5)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(heavyRun.handed).toEqual(["start"]);
    // A light lane does not queue behind it: it takes the spare at once.
    firstRun.lane.post(() => firstRun.handed.push("again"));
    expect(firstRun.handed).toEqual(["start", "again"]);
    expect(pool.waitingLanes).toBe(1);
    // The heavy lane gets the next plain token.
    third.ran();
    thirdRun.lane.yielded();
    await until(() => heavyRun.handed.length === 2);
  });

  it("is taken back past its short turn while others wait, and the lane that only looked light runs on without it", async () => {
    const pool = tokens(1, () => 0n, SPARE_TURN_NS);
    const holder = new FakeIsolate();
    started(pool, holder);
    const looksLight = new FakeIsolate();
    const onSpare = started(pool, looksLight);
    expect(onSpare.lane.onSpare).toBe(true);
    // It runs on past the spare's turn (well within a plain turn) while another light lane waits.
    looksLight.ran(5_000_000n);
    looksLight.running = true;
    const next = started(pool, new FakeIsolate());
    await until(() => next.handed.length === 1);
    expect(onSpare.lane.holding).toBe(false);
    expect(next.lane.onSpare).toBe(true);
    // Its turn counts: it is no longer light.
    expect(onSpare.lane.averageTurnNs).toBeGreaterThan(Number(SPARE_TURN_NS) / 2);
  });
});

/** Hand-written capsule bundle (see capsule-isolate.test.ts): handlers that compute for a while. */
const CODE = `var __platform_capsule = {
  kind: "platform.capsule",
  declaration: { schema: { tables: {} } },
  definition: { queries: {
    spin: async () => { let x = 0; for (let i = 0; i < 1e6; i++) x = (x * 31 + i) | 0; return x; },
    logThenSpin: async (ctx) => {
      ctx.log.info("not awaited");
      let x = 0; for (let i = 0; i < 1e6; i++) x = (x * 31 + i) | 0; return x;
    },
    wait: async () => new Promise(() => {}),
  } },
};`;

function query(name: string): DispatchRequest {
  return { kind: "query", requestId: 0, identity: null, env: {}, now: 1, seed: 1, name, argsJson: "{}" };
}

const made: CapsuleIsolate[] = [];
afterEach(() => {
  for (const isolate of made.splice(0)) isolate.dispose();
});

async function threadedIsolates(count: number): Promise<CapsuleIsolate[]> {
  const isolates: CapsuleIsolate[] = [];
  for (let i = 0; i < count; i++) {
    const standing = new InlineStanding({ ...DEFAULT_INLINE_POLICY, enabled: false });
    const isolate = await CapsuleIsolate.create(CODE, "tokens", DEFAULT_ISOLATE_LIMITS, standing);
    made.push(isolate);
    isolates.push(isolate);
  }
  return isolates;
}

/**
 * Threads born while `work` ran (this process's threads listed every ms). isolated-vm runs an
 * isolate on a thread of its pool (one per core plus one) when one is free, and otherwise on a new
 * thread that ends with its task.
 */
async function threadsBornDuring(work: Promise<unknown>): Promise<number> {
  const before = new Set(readdirSync("/proc/self/task"));
  const born = new Set<string>();
  let done = false;
  const finished = work.finally(() => {
    done = true;
  });
  while (!done) {
    for (const id of readdirSync("/proc/self/task")) if (!before.has(id)) born.add(id);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await finished;
  return born.size;
}

describe.runIf(process.platform === "linux")("run tokens on real isolates", () => {
  const count = ThreadTokens.shared().total;

  it("runs isolates on their own threads one per token, so none needs a thread beyond isolated-vm's pool, platform calls not awaited included", async () => {
    const isolates = await threadedIsolates(count + 4);
    for (const name of ["spin", "logThenSpin"]) {
      // Compiled first: each call then takes a millisecond or two, far under a turn's 50 ms of CPU
      // on a busy machine too. Then each isolate runs 10 calls in turn, all isolates at once.
      for (const isolate of isolates) await isolate.execute(query(name), () => null);
      const runs = isolates.map(async (isolate) => {
        for (let i = 0; i < 10; i++) expect((await isolate.execute(query(name), () => null)).ok).toBe(true);
      });
      const born = await threadsBornDuring(Promise.all(runs));
      // The pool may still grow to its size; no isolate needs a thread beyond it.
      expect(born, `${name}: threads born`).toBeLessThanOrEqual(count + 1);
    }
  });

  it("an isolate that awaits something that never settles holds no token", async () => {
    const isolates = await threadedIsolates(count + 2);
    const waiting = isolates.slice(0, count + 1);
    const hung = waiting.map((isolate) => isolate.execute(query("wait"), () => null).catch(() => null));
    const last = isolates[count + 1] as CapsuleIsolate;
    expect((await last.execute(query("spin"), () => null)).ok).toBe(true);
    for (const isolate of waiting) isolate.dispose();
    await Promise.all(hung);
  });
});
