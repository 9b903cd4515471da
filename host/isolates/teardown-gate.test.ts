/**
 * The teardown gate: outside the window after an isolate was stopped mid-run it costs nothing;
 * inside it, creations wait for one shared probe made on a helper isolate's thread, and an isolate
 * stopped at its memory limit opens the window.
 */
import ivm from "isolated-vm";
import { describe, expect, it } from "vitest";
import { queryRequest } from "../../test/helpers/query-request.js";
import { CapsuleIsolate } from "./capsule-isolate.js";
import { DEFAULT_INLINE_POLICY, InlineStanding } from "./inline/index.js";
import { DEFAULT_ISOLATE_LIMITS } from "./limits.js";
import { TeardownGate, teardownGate } from "./teardown-gate.js";

describe("TeardownGate", () => {
  it("lets creations through at once when nothing was stopped mid-run", () => {
    expect(new TeardownGate().beforeCreate()).toBeUndefined();
  });

  it("after a teardown, makes concurrent creations wait for one probe, and each later wave for a new one", async () => {
    const gate = new TeardownGate();
    gate.noteTeardown();
    const first = gate.beforeCreate();
    const second = gate.beforeCreate();
    expect(first).toBeInstanceOf(Promise);
    expect(second).toBe(first);
    await first;
    const third = gate.beforeCreate();
    expect(third).toBeInstanceOf(Promise);
    expect(third).not.toBe(first);
    await third;
  });

  it("a probe waits for an isolate being torn down at its memory limit on its own thread", async () => {
    const gate = new TeardownGate();
    gate.noteTeardown();
    await gate.beforeCreate(); // the helper isolate exists from now on
    const dying = new ivm.Isolate({ memoryLimit: 32 });
    const context = await dying.createContext();
    const killed = context
      .eval("const kept = []; for (;;) kept.push(new Array(1e5).fill(kept.length));")
      .then(
        () => "finished",
        () => "killed",
      );
    expect(await killed).toBe("killed");
    // Whether or not the teardown still runs, the probe resolves once the allocator lock is free,
    // and the main thread then creates an isolate as usual.
    await gate.beforeCreate();
    const next = new ivm.Isolate({ memoryLimit: 8 });
    expect(await (await next.createContext()).eval("1 + 1")).toBe(2);
    next.dispose();
  });
});

describe("the process's gate", () => {
  it("opens when a capsule isolate is stopped at its memory limit", async () => {
    const code = `var __platform_capsule = { kind: "platform.capsule", declaration: { schema: { tables: {} } },
      definition: { queries: { grow: async () => { const keep = []; for (;;) keep.push(new Array(10000).fill(keep.length)); } } } };`;
    const isolate = await CapsuleIsolate.create(
      code,
      "teardown-gate",
      { ...DEFAULT_ISOLATE_LIMITS, memoryMb: 32, cpuMs: 60_000, wallMs: 120_000 },
      new InlineStanding({ ...DEFAULT_INLINE_POLICY, enabled: false }),
    );
    await expect(isolate.execute(queryRequest("grow"), () => null)).rejects.toMatchObject({
      code: "out_of_memory",
    });
    const waiting = teardownGate.beforeCreate();
    expect(waiting).toBeInstanceOf(Promise);
    await waiting;
    isolate.dispose();
  });
});
