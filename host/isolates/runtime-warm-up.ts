import { createHash } from "node:crypto";
import { type DispatchRequest, handlerRequestFields } from "../../sdk/protocol/index.js";
import { CapsuleIsolate } from "./capsule-isolate.js";
import type { CodeCache } from "./code-cache.js";
import { DEFAULT_INLINE_POLICY, type InlinePolicy, InlineStanding } from "./inline/index.js";
import { refreshRuntimeCache } from "./isolate-loader.js";
import type { IsolateLimits } from "./limits.js";

/**
 * A capsule of the platform's own, written by hand: the warm-up's calls go through the runtime's
 * dispatch, context and result paths as a tenant's first call does.
 */
const WARM_UP_CAPSULE = `var __platform_capsule = {
  kind: "platform.capsule",
  declaration: { schema: { tables: {} } },
  definition: { queries: { warm: async (ctx, args) => ({ at: Date.now(), n: Math.random(), args }) } },
};`;
const WARM_UP_ARTIFACT = createHash("sha256").update(WARM_UP_CAPSULE).digest("hex");

const noSyscalls = () => null;

/**
 * Warms the runtime's code cache once: in an isolate of the platform's own (no tenant code ever
 * runs in it), the built-in capsule answers a call as a cold start's first call would be answered
 * under the host's inline `policy` (inline, unless the host turned that off), then the
 * runtime is compiled again there to produce a cache of every function those calls compiled (see
 * refreshRuntimeCache). Isolates made afterwards compile the runtime from it, so a cold start's
 * first call does not compile the runtime's dispatch path again. A failure leaves the compile-time
 * cache in use.
 */
export async function warmRuntimeCache(
  limits: IsolateLimits,
  cache: CodeCache,
  policy: InlinePolicy = DEFAULT_INLINE_POLICY,
): Promise<void> {
  const standing = new InlineStanding(policy);
  const isolate = await CapsuleIsolate.create(WARM_UP_CAPSULE, WARM_UP_ARTIFACT, limits, standing, { cache });
  try {
    // Shaped as the host's own requests are (call-execution.ts).
    const request: DispatchRequest = Object.assign(
      handlerRequestFields("warm", '{"warm":true}', null, {}, Date.now(), 1),
      { kind: "query" as const },
    );
    await isolate.execute(request, noSyscalls);
    await refreshRuntimeCache(isolate.isolate, cache);
  } finally {
    isolate.dispose();
  }
}
