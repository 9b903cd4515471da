/**
 * A handler's platform calls are counted, refused ones too: a call that fails its checks (an id no
 * row can have) read nothing and cost the host's main thread as much as a read, for free, and
 * 20,000 of them held it 0.93 s a request. Past `LIMITS.platformCallsPerHandler` the execution
 * fails, even when the handler catches the error.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_ISOLATE_LIMITS } from "../host/isolates/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { describeOnBothTransports, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, string, table } from "platform/server";
export default capsule({
  schema: { items: table({ name: string() }) },
  queries: {
    spin: async (ctx, args: { calls: number }) => {
      let answered = 0;
      for (let i = 0; i < args.calls; i++) {
        try {
          if ((await ctx.db.items.get("#" as never)) === null) answered++;
        } catch {
          // Caught: the execution fails all the same past the limit.
        }
      }
      return answered;
    },
  },
});
`;

describeOnBothTransports((inline) => {
  let host: TestHost;
  beforeAll(async () => {
    // 16,000 calls came within the default second of CPU and past it on a busy CI machine (a
    // timeout, 504): the limit on calls, not on time, is what this test is about.
    host = await startTestHost({
      requestQuota: false,
      pool: { inline, limits: { ...DEFAULT_ISOLATE_LIMITS, cpuMs: 60_000, wallMs: 120_000 } },
    });
    expect((await host.deployCode("calls", await sourceCode(CAPSULE))).status).toBe(201);
  });
  afterAll(() => host.dispose());

  it("answers up to the limit, and fails the execution past it however the handler catches", async () => {
    const within = await host.call("calls", "query", "spin", { calls: 100 });
    expect(within.json()).toEqual({ value: 100 });
    const past = await host.call("calls", "query", "spin", { calls: LIMITS.platformCallsPerHandler + 10 });
    expect([past.status, past.json()]).toEqual([
      429,
      {
        error: {
          code: "limit_exceeded",
          message: `A handler may make at most ${LIMITS.platformCallsPerHandler} platform calls (database calls and log lines); this one made more. Read and write in fewer, larger calls.`,
        },
      },
    ]);
  });
});
