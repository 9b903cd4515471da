/**
 * Inline entries are gathered per turn of the event loop (host/isolates/inline/turn-queue.ts): calls
 * made in one turn enter the isolate once it ends, in the order they came, and light starts share
 * one entry, run one after another by the runtime; so do answers to different handlers' calls.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  CapsuleIsolate,
  DEFAULT_INLINE_POLICY,
  DEFAULT_ISOLATE_LIMITS,
  InlineStanding,
  type SyscallHandler,
} from "../host/isolates/index.js";
import { type DispatchRequest, SYSCALL } from "../sdk/protocol/index.js";
import { isPlatformError } from "../sdk/values/index.js";
import { sourceCode } from "./helpers/host.js";

const CAPSULE = `import { capsule, table, string } from "platform/server";
const spin = (ms) => { let x = 0; for (let i = 0; i < ms * 200000; i++) x += i % 7; return x; };
let starts = 0;
let kept;
let poke;
let openGate;
let lent;
let release;
const gate = new Promise((resolve) => { release = resolve; });
export default capsule({
  schema: { items: table({ label: string() }) },
  queries: {
    echo: async (ctx, args) => { await ctx.db.items.get(args.id); return args.id; },
    spin: async (ctx, args) => { spin(args.ms); await ctx.db.items.get("x"); return args.ms; },
    stuck: async () => { await new Promise(() => {}); },
    stuckAfter: async (ctx, args) => { await ctx.db.items.get(args.id); await new Promise(() => {}); },
    spinAfter: async (ctx, args) => { await ctx.db.items.get("x"); spin(args.ms); return args.ms; },
    spinThenGate: async (ctx, args) => { await ctx.db.items.get("x"); spin(args.ms); await gate; return args.ms; },
    keep: async (ctx) => { kept = ctx; return "kept"; },
    poker: async (ctx, args) => {
      await ctx.db.items.get("a");
      const read = args.unawaited ? ctx.db.items.get("a2") : null;
      poke?.();
      await read;
      return "poked";
    },
    finisher: async (ctx, args) => {
      await ctx.db.items.get("a");
      openGate?.();
      (async () => {
        for (let i = 0; i < args.ticks; i++) await null;
        ctx.db.items.get("late").catch(() => {});
      })();
      return "finished";
    },
    gatedAfter: async (ctx, args) => {
      const gated = new Promise((resolve) => { openGate = resolve; });
      ctx.db.items.get("b").catch(() => {});
      await gated;
      for (let i = 0; i < args.ticks; i++) await null;
      return "gated";
    },
    lender: async (ctx) => { lent = ctx; await ctx.db.items.get("w"); return "lent"; },
    borrower: async (ctx, args) => {
      await ctx.db.items.get("x");
      await lent.db.items.get("slow").catch(() => {});
      spin(args.ms);
      return args.ms;
    },
    readThenSpin: async (ctx, args) => {
      if (args.answered) await ctx.db.items.get("x");
      const read = ctx.db.items.get("y");
      spin(args.ms);
      await read;
      return args.ms;
    },
    sleeper: async (ctx) => {
      poke = () => { ctx.db.items.get("poke").catch(() => {}); };
      await ctx.db.items.get("b");
      await gate;
      return "slept";
    },
    spinMany: async (ctx, args) => {
      for (let i = 0; i < args.n; i++) {
        await ctx.db.items.get("s" + i);
        spin(args.ms);
        if (args.stale) await kept.db.items.get("z").catch(() => {});
      }
      return args.n;
    },
    both: async (ctx, args) => {
      await Promise.all([ctx.db.items.get(args.id + "-1"), ctx.db.items.get(args.id + "-2")]);
      return args.id;
    },
    counted: async (ctx, args) => { starts++; await ctx.db.items.get(args.id); return args.id; },
    gated: async () => { await gate; return "released"; },
    open: async () => { release(); return "opened"; },
    starts: async () => starts,
    clock: async (ctx, args) => {
      const started = [Date.now(), Math.random()];
      await ctx.db.items.get(args.id);
      await Promise.resolve();
      await null;
      return [...started, Date.now(), Math.random()];
    },
  },
});
`;

let code: string;

beforeAll(async () => {
  code = await sourceCode(CAPSULE);
});

function call(name: string, args: unknown, now = 1_700_000_000_000, seed = 1): DispatchRequest {
  return {
    kind: "query",
    requestId: 0,
    name,
    argsJson: JSON.stringify(args),
    identity: null,
    env: {},
    now,
    seed,
  };
}

const echo = (id: string) => call("echo", { id });

/**
 * As {@link recordingReads}, but answered later, as a read from PostgreSQL or a scan is: the answer
 * goes into the isolate in an entry of its own making.
 */
function laterReads(reads: string[] = []): SyscallHandler {
  const now = recordingReads(reads);
  return (op, args) => Promise.resolve(now(op, args));
}

/** Answers every point read with "no such row", recording the ids read. */
function recordingReads(reads: string[] = []): SyscallHandler {
  return (op, args) => {
    if (op === SYSCALL.dbGet) reads.push((args as { id: string }).id);
    return null;
  };
}

function answerOf(response: Awaited<ReturnType<CapsuleIsolate["execute"]>>): unknown {
  if (!response.ok) throw new Error(`${response.error.code}: ${response.error.message}`);
  return JSON.parse(response.valueJson);
}

/** Isolates a test made; each is disposed after its test. */
const made: CapsuleIsolate[] = [];
afterEach(() => {
  for (const isolate of made.splice(0)) isolate.dispose();
});

/**
 * Slices far longer than any entry here needs, so a busy machine never stops one: the sentinel
 * measures an entry while it runs on a steady clock, so a descheduled host can overrun the default
 * slice with a few milliseconds of CPU. What follows such a stop (demotion, the platform running
 * the handler again) is tested in inline.test.ts; here the subject is how a turn's entries go in.
 * For the same reason no handler here counts as heavy (the spin below, measured on that clock,
 * can average over `heavyMs` on a busy machine); heavy handlers are tested in inline.test.ts.
 */
const ROOMY_SLICES = { ...DEFAULT_INLINE_POLICY, sliceMs: 250, heavyMs: 1000 };

async function freshIsolate(limits = DEFAULT_ISOLATE_LIMITS): Promise<CapsuleIsolate> {
  const isolate = await CapsuleIsolate.create(code, "inline-turn", limits, new InlineStanding(ROOMY_SLICES));
  made.push(isolate);
  return isolate;
}

/** An isolate whose inline starts have been measured, so the next turn's starts share entries. */
async function warmIsolate(limits = DEFAULT_ISOLATE_LIMITS): Promise<CapsuleIsolate> {
  const isolate = await freshIsolate(limits);
  // The average start decays from the first, cold one: after 30 it is the warm cost.
  for (let i = 0; i < 30; i++) await isolate.execute(echo(`warm-${i}`), recordingReads());
  return isolate;
}

/** A warm isolate whose answers to calls have been measured too, so the next turn's answers share entries. */
async function warmAnswers(limits = DEFAULT_ISOLATE_LIMITS): Promise<CapsuleIsolate> {
  const isolate = await warmIsolate(limits);
  for (let i = 0; i < 30; i++) await isolate.execute(echo(`later-${i}`), laterReads());
  return isolate;
}

describe("inline entries gathered per turn of the event loop", () => {
  it("calls made in one turn are entered once it ends, in order, and still inline", async () => {
    const isolate = await freshIsolate();
    const reads: string[] = [];
    const ids = ["first", "second", "third", "fourth"];
    expect(isolate.mayRunInline()).toBe(true);
    const answers = ids.map((id) => isolate.execute(echo(id), recordingReads(reads)));
    // Nothing has entered the isolate while this turn runs.
    expect(reads).toEqual([]);
    const responses = await Promise.all(answers);
    expect(reads).toEqual(ids);
    expect(responses.map(answerOf)).toEqual(ids);
    expect(isolate.mayRunInline()).toBe(true);
  });

  it.each([
    { what: "light starts of one turn", warm: warmIsolate, reads: recordingReads, spinner: "spin", most: 2 },
    // Nine starts and nine answers: one entry for the starts, few for the answers.
    {
      what: "answers to several handlers' calls",
      warm: warmAnswers,
      reads: laterReads,
      spinner: "spinAfter",
      most: 4,
    },
  ])("$what share one entry, each handler charged its own CPU", async ({ warm, reads, spinner, most }) => {
    const isolate = await warm();
    const before = isolate.entries;
    const read: string[] = [];
    const ids = ["a", "b", "c", "d", "e", "f", "g", "h"];
    const light = ids.map((id) => isolate.execute(echo(id), reads(read)));
    const heavy = isolate.execute(call(spinner, { ms: 5 }), reads(read));
    const [spun, ...echoed] = await Promise.all([heavy, ...light]);
    expect(echoed.map(answerOf)).toEqual(ids);
    expect(answerOf(spun as Awaited<typeof heavy>)).toBe(5);
    expect(read).toEqual([...ids, "x"]);
    // Nine handlers, far fewer entries.
    expect(isolate.entries - before).toBeLessThanOrEqual(most);
    // The spin's CPU went to it, not to the echoes that shared its entry (the median echo: a GC
    // pause is charged to whoever runs when it comes, here as in an entry of its own).
    const heavyMs = spun?.cpuMs ?? 0;
    const echoMs = echoed.map((response) => response.cpuMs).sort((x, y) => x - y);
    expect(heavyMs).toBeGreaterThan(1);
    expect(echoMs[Math.floor(echoMs.length / 2)]).toBeLessThan(heavyMs / 4);
    expect(isolate.mayRunInline()).toBe(true);
  });

  it.each([
    { what: "sharing an entry of starts", warm: warmIsolate, reads: recordingReads },
    { what: "answered in one entry", warm: warmAnswers, reads: laterReads },
  ])("handlers $what each keep their own clock and random state across awaits", async ({ warm, reads }) => {
    const isolate = await warm();
    const requests = [1, 2, 3, 4, 5].map((n) => call("clock", { id: `c${n}` }, 1_700_000_000_000 + n, n));
    // Alone, one per turn.
    const alone: unknown[] = [];
    for (const request of requests) alone.push(answerOf(await isolate.execute(request, reads())));
    const before = isolate.entries;
    const together = (await Promise.all(requests.map((r) => isolate.execute(r, reads())))).map(answerOf);
    // Fewer entries than handlers.
    expect(isolate.entries - before).toBeLessThan(requests.length);
    expect(together).toEqual(alone);
    expect((alone[0] as number[])[0]).toBe(1_700_000_000_001);
    expect((alone[0] as number[])[2]).toBe(1_700_000_000_001);
  });

  it.each([
    { what: "starts", warm: warmIsolate, reads: recordingReads, stuck: "stuck" },
    { what: "answers", warm: warmAnswers, reads: laterReads, stuck: "stuckAfter" },
  ])("a handler that never settles does not hold back the $what after it", async ({ warm, reads, stuck }) => {
    // The stuck one meets the wall limit; the others must finish within it on a busy machine too.
    const isolate = await warm({ ...DEFAULT_ISOLATE_LIMITS, wallMs: 3000 });
    const first = isolate.execute(echo("before"), reads());
    const never = isolate.execute(call(stuck, { id: "s" }), reads());
    const after = ["after-1", "after-2", "after-3"].map((id) => isolate.execute(echo(id), reads()));
    expect(answerOf(await first)).toBe("before");
    expect((await Promise.all(after)).map(answerOf)).toEqual(["after-1", "after-2", "after-3"]);
    const failure = await never.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isPlatformError(failure, "timeout")).toBe(true);
    expect(isolate.mayRunInline()).toBe(true);
  });

  it("a handler released in a later entry does not start the ones after it a second time", async () => {
    const isolate = await warmIsolate();
    const before = isolate.entries;
    const gated = isolate.execute(call("gated", {}), recordingReads());
    const counted = ["a", "b", "c"].map((id) => isolate.execute(call("counted", { id }), recordingReads()));
    expect((await Promise.all(counted)).map(answerOf)).toEqual(["a", "b", "c"]);
    // The gated handler ended the first entry's run; the others went in again.
    expect(isolate.entries - before).toBe(2);
    expect(answerOf(await isolate.execute(call("open", {}), recordingReads()))).toBe("opened");
    expect(answerOf(await gated)).toBe("released");
    expect(answerOf(await isolate.execute(call("starts", {}), recordingReads()))).toBe(3);
  });

  it("a handler waiting on two calls at once gets both answers, beside others answered together", async () => {
    const isolate = await warmAnswers();
    const reads: string[] = [];
    const requests = [call("both", { id: "p" }), echo("a"), call("both", { id: "q" }), echo("b"), echo("c")];
    const responses = await Promise.all(requests.map((r) => isolate.execute(r, laterReads(reads))));
    expect(responses.map(answerOf)).toEqual(["p", "a", "q", "b", "c"]);
    expect([...reads].sort()).toEqual(["a", "b", "c", "p-1", "p-2", "q-1", "q-2"]);
    expect(isolate.mayRunInline()).toBe(true);
  });

  it("a handler that crosses for another one before its turn does not drop the answers after it", async () => {
    // One entry answers all three: the poker makes a call for the sleeper (whose ctx it was handed)
    // during its own turn; the sleeper then awaits a gate after its answer.
    // With `unawaited`, the poker's call for the sleeper comes right after a call of its own that
    // it has not awaited yet, before the runtime has begun the sleeper's turn.
    for (const unawaited of [false, true]) {
      // A fresh isolate each time: its gate is still shut.
      const isolate = await warmAnswers({ ...DEFAULT_ISOLATE_LIMITS, wallMs: 2000 });
      const poker = isolate.execute(call("poker", { unawaited }), laterReads());
      const sleeper = isolate.execute(call("sleeper", {}), laterReads());
      const after = isolate.execute(echo("after"), laterReads());
      expect(answerOf(await poker)).toBe("poked");
      expect(answerOf(await after)).toBe("after");
      expect(answerOf(await isolate.execute(call("open", {}), recordingReads()))).toBe("opened");
      expect(answerOf(await sleeper)).toBe("slept");
    }
  });
});

describe("CPU of inline entries", () => {
  it("a handler that answers while the hand-back of its last call is on its way does not skip the next one's turn", async () => {
    const isolate = await warmAnswers({ ...DEFAULT_ISOLATE_LIMITS, wallMs: 2000 });
    // The finisher opens the gated handler's gate and answers; its stray call comes `ticks` later,
    // the gated one answers `ticks` after its gate opens: each timing of the two, one at a time.
    for (let finisher = 0; finisher <= 5; finisher++)
      for (let gated = 0; gated <= 1; gated++) {
        const first = isolate.execute(call("finisher", { ticks: finisher }), laterReads());
        const second = isolate.execute(call("gatedAfter", { ticks: gated }), laterReads());
        const third = isolate.execute(echo("third"), laterReads());
        expect((await Promise.all([first, second, third])).map(answerOf)).toEqual([
          "finished",
          "gated",
          "third",
        ]);
      }
  });

  it("code that goes on after a call made with an ended handler's ctx is charged to the handler it runs in", async () => {
    const isolate = await warmAnswers();
    // The lender has answered by the time the borrower's call in its name is answered.
    const slowLoan: SyscallHandler = (_op, args) =>
      new Promise((resolve) =>
        setTimeout(() => resolve(null), (args as { id: string }).id === "slow" ? 20 : 0),
      );
    const lender = isolate.execute(call("lender", {}), slowLoan);
    const borrowed = await isolate.execute(call("borrower", { ms: 120 }), slowLoan);
    expect(answerOf(await lender)).toBe("lent");
    expect(answerOf(borrowed)).toBe(120);
    expect(borrowed.cpuMs).toBeGreaterThan(4);
  });

  it("a handler is charged its own CPU when it spins after its answer and then awaits something else", async () => {
    const isolate = await warmAnswers();
    const echoed = isolate.execute(echo("first"), laterReads());
    const spun = isolate.execute(call("spinThenGate", { ms: 120 }), laterReads());
    const echoMs = (await echoed).cpuMs;
    expect(answerOf(await isolate.execute(call("open", {}), recordingReads()))).toBe("opened");
    const spunMs = (await spun).cpuMs;
    expect(spunMs).toBeGreaterThan(4);
    expect(echoMs).toBeLessThan(spunMs / 2);
  });

  it("what a handler runs between a call and awaiting it is its own, not the next handler's", async () => {
    for (const answered of [false, true]) {
      // Without `answered` the two share an entry of starts, with it an entry of answers.
      const isolate = await warmAnswers();
      const spun = isolate.execute(call("readThenSpin", { ms: 120, answered }), laterReads());
      const next = isolate.execute(echo("next"), laterReads());
      const spunMs = (await spun).cpuMs;
      expect(spunMs).toBeGreaterThan(4);
      expect((await next).cpuMs).toBeLessThan(spunMs / 2);
    }
  });

  it("a call made through an ended handler's ctx does not move a handler's CPU off it", async () => {
    const isolate = await warmAnswers();
    await isolate.execute(call("keep", {}), recordingReads());
    const runs = [1, 2, 3].map(() =>
      isolate.execute(call("spinMany", { n: 10, ms: 10, stale: true }), laterReads()),
    );
    for (const response of await Promise.all(runs)) {
      expect(answerOf(response)).toBe(10);
      // Ten spins of a few milliseconds each; charged to nobody, the run would show well under 1 ms.
      expect(response.cpuMs).toBeGreaterThan(5);
    }
  });

  it("a handler over its CPU limit in entries each shorter than a slice fails with timeout", async () => {
    const isolate = await freshIsolate({ ...DEFAULT_ISOLATE_LIMITS, cpuMs: 100 });
    const failure = await isolate
      .execute(call("spinMany", { n: 100, ms: 20, stale: false }), laterReads())
      .then(
        (response) => response,
        (error: unknown) => error,
      );
    expect(isPlatformError(failure, "timeout")).toBe(true);
  });
});
