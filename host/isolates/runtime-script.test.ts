/**
 * The runtime script is strict however it is bundled: a sloppy runtime function's `caller` and
 * `arguments` would let capsule code reach the real built-ins the bounds hold (test/sandbox.test.ts
 * 23d tries that climb inside a real isolate).
 */
import { describe, expect, it } from "vitest";
import { loadRuntimeScript } from "./runtime-script.js";

describe("the runtime script", () => {
  it("begins with a use strict directive", async () => {
    const { code } = await loadRuntimeScript();
    expect(code.startsWith('"use strict";\n')).toBe(true);
  });
});
