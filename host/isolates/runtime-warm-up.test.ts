import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CapsuleIsolate } from "./capsule-isolate.js";
import { CodeCache } from "./code-cache.js";
import { DEFAULT_INLINE_POLICY, InlineStanding } from "./inline/index.js";
import { createBlankIsolate } from "./isolate-loader.js";
import { DEFAULT_ISOLATE_LIMITS } from "./limits.js";
import { warmRuntimeCache } from "./runtime-warm-up.js";

/** A tenant's capsule, written by hand. */
const CODE = `var __platform_capsule = {
  kind: "platform.capsule",
  declaration: { schema: { tables: {} } },
  definition: { queries: { echo: async (ctx, args) => args.value } },
};`;

const query = (value: unknown) =>
  ({
    kind: "query",
    requestId: 0,
    name: "echo",
    argsJson: JSON.stringify({ value }),
    identity: null,
    env: {},
    now: 1,
    seed: 1,
  }) as const;

describe("the runtime's warmed code cache", () => {
  it("is made once, and blank isolates compile the runtime from it and serve a tenant", async () => {
    const cache = new CodeCache();
    // Before the warm-up a blank isolate compiles the runtime from source, making the compile-time cache.
    (await createBlankIsolate(DEFAULT_ISOLATE_LIMITS, cache)).isolate.dispose();
    expect(cache.counts).toMatchObject({ miss: 1, hit: 0, refreshed: 0 });

    await warmRuntimeCache(DEFAULT_ISOLATE_LIMITS, cache);
    // The warm-up isolate compiled the runtime from the compile-time cache and its capsule from
    // source, then remade the runtime's cache after its call.
    expect(cache.counts).toMatchObject({ hit: 1, refreshed: 1 });

    const blank = await createBlankIsolate(DEFAULT_ISOLATE_LIMITS, cache);
    expect(cache.counts.hit).toBe(2);
    expect(cache.counts.rejected).toBe(0);
    const isolate = await CapsuleIsolate.create(
      CODE,
      createHash("sha256").update(CODE).digest("hex"),
      DEFAULT_ISOLATE_LIMITS,
      new InlineStanding(DEFAULT_INLINE_POLICY),
      { cache, blank },
    );
    try {
      expect(await isolate.execute(query(7), () => null)).toMatchObject({ ok: true, valueJson: "7" });
    } finally {
      isolate.dispose();
    }
  });
});
