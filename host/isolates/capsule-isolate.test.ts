/**
 * How an isolate's failures are reported: each from what the host itself decided or observed
 * (its CPU watchdog, its own dispose, an isolate that isolated-vm disposed at the memory limit),
 * never from isolated-vm's message text.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { DispatchRequest } from "../../sdk/protocol/index.js";
import { isPlatformError } from "../../sdk/values/index.js";
import { CapsuleIsolate } from "./capsule-isolate.js";
import { DEFAULT_INLINE_POLICY, InlineStanding } from "./inline/index.js";
import { DEFAULT_ISOLATE_LIMITS, type IsolateLimits } from "./limits.js";

/** A capsule bundle as the runtime loads it, written by hand (no bundler needed). */
const CODE = `var __platform_capsule = {
  kind: "platform.capsule",
  declaration: { schema: { tables: {} } },
  definition: { queries: {
    echo: async (ctx, args) => args.value,
    loop: async () => { for (;;) {} },
    grow: async () => { const keep = []; for (;;) keep.push(new Array(10000).fill(keep.length)); },
    wait: async () => new Promise(() => {}),
  } },
};`;

/** What every request here shares: a query at a fixed clock and seed, with no identity. */
const QUERY = { kind: "query", requestId: 0, identity: null, env: {}, now: 1, seed: 1 } as const;

function query(name: string, args: unknown = {}): DispatchRequest {
  return { ...QUERY, name, argsJson: JSON.stringify(args) };
}

const noSyscalls = () => null;

const made: CapsuleIsolate[] = [];
afterEach(() => {
  for (const isolate of made.splice(0)) isolate.dispose();
});

async function isolateWith(limits: Partial<IsolateLimits>, inline: boolean): Promise<CapsuleIsolate> {
  const standing = new InlineStanding({ ...DEFAULT_INLINE_POLICY, enabled: inline });
  const isolate = await CapsuleIsolate.create(
    CODE,
    "failures",
    { ...DEFAULT_ISOLATE_LIMITS, ...limits },
    standing,
  );
  made.push(isolate);
  return isolate;
}

async function failureOf(answer: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await answer.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!isPlatformError(error)) throw new Error(`expected a platform error, got ${String(error)}`);
  return { code: error.code, message: error.message };
}

describe("failures of an isolate, on its own thread", () => {
  it("declares and answers", async () => {
    const isolate = await isolateWith({}, false);
    expect(await isolate.declare()).toEqual({ schema: { tables: {} } });
    expect(await isolate.execute(query("echo", { value: 7 }), noSyscalls)).toMatchObject({
      ok: true,
      valueJson: "7",
    });
  });

  it("a loop is stopped at the CPU limit as timeout, and the isolate is gone", async () => {
    const isolate = await isolateWith({ cpuMs: 50 }, false);
    expect(await failureOf(isolate.execute(query("loop"), noSyscalls))).toEqual({
      code: "timeout",
      message: "The handler used more than 50 ms of CPU time and was stopped.",
    });
    expect(isolate.isDisposed).toBe(true);
  });

  it("a heap that grows to the limit is out_of_memory when no time limit comes first", async () => {
    const isolate = await isolateWith({ memoryMb: 32, cpuMs: 60_000, wallMs: 120_000 }, false);
    expect(await failureOf(isolate.execute(query("grow"), noSyscalls))).toEqual({
      code: "out_of_memory",
      message: "The handler exceeded the 32 MiB memory limit and was stopped.",
    });
  });

  it("a handler that never settles fails alone at the wall-clock limit", async () => {
    const isolate = await isolateWith({ wallMs: 100 }, false);
    expect(await failureOf(isolate.execute(query("wait"), noSyscalls))).toMatchObject({ code: "timeout" });
    expect(isolate.isDisposed).toBe(false);
    expect(await isolate.execute(query("echo", { value: 1 }), noSyscalls)).toMatchObject({ ok: true });
  });
});

describe("failures of an isolate, inline", () => {
  it("what still runs when the host disposes the isolate fails as unavailable", async () => {
    const isolate = await isolateWith({}, true);
    const waiting = isolate.execute(query("wait"), noSyscalls);
    await new Promise((resolve) => setImmediate(resolve));
    isolate.dispose();
    expect(await failureOf(waiting)).toEqual({
      code: "unavailable",
      message: "The deployment's isolate was stopped; retry.",
    });
    expect(await failureOf(isolate.execute(query("echo", { value: 1 }), noSyscalls))).toMatchObject({
      code: "unavailable",
    });
  });
});
