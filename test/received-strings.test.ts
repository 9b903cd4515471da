/**
 * Long strings the host hands into an isolate (platform calls' answers, requests) are garbage like
 * any other once a handler is done with them (sdk/protocol/crossing-text.ts). Handed in as they
 * were, isolated-vm made them external strings that V8 left uncollected: a deployment reading
 * pages of rows held 100 MB of them within seconds, and was weighed as a heap near its limit.
 * With real isolates, on both transports, for every way a string comes in (calls go straight to
 * the deployments: this many over HTTP would spend the request quota).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { LIMITS } from "../sdk/protocol/index.js";
import { describeOnBothTransports, sourceCode, startTestHost, type TestHost } from "./helpers/host.js";

const CAPSULE = `import { capsule, table, string } from "platform/server";
export default capsule({
  schema: { docs: table({ text: string() }) },
  queries: {
    scan: async (ctx) => (await ctx.db.docs.take(40)).length,
    get: async (ctx, args) => {
      let length = 0;
      for (const id of args.ids) length += (await ctx.db.docs.get(id)).text.length;
      return length;
    },
    echo: async (ctx, args) => args.text.length,
  },
  mutations: {
    add: async (ctx, args) => ctx.db.docs.insert({ text: args.text }),
  },
});
`;

/** About 4 KB per row; a scan answers 40 of them (160 KB), a point read one, ten per call. */
const ROW_TEXT = "row text, ".repeat(400);
/** What each way in hands over in all: well beyond what the heap may hold before it is weighed as breaching. */
const HANDED_IN_BYTES = 160 * 1024 * 1024;
/** A heap weighed above this (garbage included) holds its deployment to the breached slots. */
const BREACH_BYTES = LIMITS.isolateMemoryMb * 1024 * 1024 * LIMITS.breachHeapShare;

let code: string;

beforeAll(async () => {
  code = await sourceCode(CAPSULE);
});

describeOnBothTransports((inline) => {
  let host: TestHost;
  const ids: string[] = [];

  beforeAll(async () => {
    host = await startTestHost({ pool: { inline } });
    const deployed = await host.deployCode("docs", code);
    expect(deployed.status, deployed.text()).toBe(201);
    for (let i = 0; i < 40; i++) {
      const added = await host.call("docs", "mutation", "add", { text: ROW_TEXT });
      expect(added.status, added.text()).toBe(200);
      ids.push(added.json<{ value: string }>().value);
    }
  });
  afterAll(async () => {
    await host.dispose();
  });

  /** Calls `name` until `bytesEach` per call add up to {@link HANDED_IN_BYTES}; the largest heap weighed between calls. */
  async function largestHeap(
    name: string,
    args: unknown,
    bytesEach: number,
    answer: number,
  ): Promise<number> {
    const runner = host.deployments.pool.runner("docs", (await host.deployments.require("docs")).artifact);
    const argsJson = JSON.stringify(args);
    let largest = 0;
    for (let i = 0; i * bytesEach < HANDED_IN_BYTES; i++) {
      const { valueJson } = await host.deployments.call("docs", {
        kind: "query",
        name,
        argsJson,
        identity: null,
      });
      expect(JSON.parse(valueJson)).toBe(answer);
      if (i % 10 === 0) largest = Math.max(largest, runner.heapBytes());
    }
    return largest;
  }

  it("collects platform calls' long answers: scans and point reads", async () => {
    const scans = await largestHeap("scan", {}, 40 * ROW_TEXT.length, 40);
    console.log(`largest heap while scans handed in 160 MB: ${(scans / 2 ** 20).toFixed(1)} MiB`);
    expect(scans).toBeLessThan(BREACH_BYTES);
    const tenIds = ids.slice(0, 10);
    const gets = await largestHeap("get", { ids: tenIds }, 10 * ROW_TEXT.length, 10 * ROW_TEXT.length);
    console.log(`largest heap while point reads handed in 160 MB: ${(gets / 2 ** 20).toFixed(1)} MiB`);
    expect(gets).toBeLessThan(BREACH_BYTES);
  }, 120_000);

  it("collects long requests", async () => {
    const text = "x".repeat(64 * 1024);
    const largest = await largestHeap("echo", { text }, text.length, text.length);
    console.log(`largest heap while requests handed in 160 MB: ${(largest / 2 ** 20).toFixed(1)} MiB`);
    expect(largest).toBeLessThan(BREACH_BYTES);
  }, 120_000);
});
