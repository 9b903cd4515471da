/**
 * A database call's failure, awaited by the handler, carries the handler's frame in its stack on
 * both transports (the developer's terminal shows it in the capsule's source). The runtime's own
 * async methods await their calls rather than return them: V8's async stack traces follow awaits
 * only: the runtime's insert and update returned their call, and the stack ended inside the
 * runtime (a fresh user's trial saw database failures printed with no line).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeOnBothTransports, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, string, table } from "platform/server";
export default capsule({
  schema: { items: table({ name: string() }) },
  mutations: {
    updateMissing: async (ctx) => {
      await ctx.db.items.update("bogus" as never, { name: "x" });
    },
    insertWrong: async (ctx) => {
      await ctx.db.items.insert({ name: 7 } as never);
    },
  },
});
`;

describeOnBothTransports((inline) => {
  let host: TestHost;
  beforeAll(async () => {
    host = await startTestHost({ requestQuota: false, pool: { inline } });
    expect((await host.deployCode("stacks", await sourceCode(CAPSULE))).status).toBe(201);
    // Stacks as the isolate gives them (bundle positions): platform dev maps them to the source.
    host.deployments.logs.mapStacks("stacks", (stack) => stack);
  });
  afterAll(() => host.dispose());

  it("keeps the handler's frame in the stack of an awaited update's and insert's failure", async () => {
    for (const name of ["updateMissing", "insertWrong"]) {
      expect((await host.call("stacks", "mutation", name)).status).toBeGreaterThanOrEqual(400);
      const failed = host.deployments.logs
        .recent("stacks")
        .findLast((line) => line.handler === name && line.call?.error);
      expect(failed?.call?.error?.stack, name).toMatch(new RegExp(`at async ${name} \\(`));
    }
  });
});
