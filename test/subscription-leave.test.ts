/**
 * Leaving a subscription before its first outcome, tried as an attacker would (found by review):
 * subscribing to a query that hangs and unsubscribing at once, over and over, kept every
 * subscription (its group, its arguments) until the query's first run ended, up to its wall-clock
 * limit, while the socket's bounds on arguments had already let them go: about 12 MiB of heap a
 * second from eight addresses, without limit. Real host, real socket, real isolate.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { connectSync } from "./helpers/sync-socket.js";

const CAPSULE = `import { capsule, query } from "platform/server";
export default capsule({
  schema: {},
  queries: {
    hang: query(async () => new Promise(() => {})),
    ready: query(async () => 1),
  },
});
`;

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployCode("leave", await sourceCode(CAPSULE))).status).toBe(201);
}, 60_000);
afterAll(async () => {
  await host.dispose();
});

const subscribersOf = (deployment: string) =>
  host.live.subscriberCounts().find(([id]) => id === deployment)?.[1] ?? 0;

describe("leaving a subscription before its first outcome", () => {
  it("lets go of it at once, however long its query runs", async () => {
    const socket = await connectSync(host.deploymentUrl("leave"));
    try {
      const pad = "x".repeat(2_000);
      for (let i = 0; i < 300; i++) {
        socket.subscribe(`hang-${i}`, "hang", { i, pad });
        socket.ws.send(JSON.stringify({ type: "unsubscribe", id: `hang-${i}` }));
      }
      // Messages are handled in order: once this one's value is back, every pair before it was.
      socket.subscribe("ready", "ready", {});
      await socket.next((m) => m.id === "ready" && m.type === "value");
      // Before the fix: 301, until the hanging runs ended at their wall-clock limit.
      expect(subscribersOf("leave")).toBe(1);
      // Still hanging, and nothing was pushed to the subscriptions that left.
      expect(socket.messages.filter((m) => String(m.id).startsWith("hang-"))).toEqual([]);
      // The id can be used again, and its subscription counts while it stays.
      socket.subscribe("hang-0", "hang", {});
      await expect.poll(() => subscribersOf("leave"), { timeout: 10_000 }).toBe(2);
    } finally {
      socket.ws.close();
    }
    // Closing the socket leaves the rest, the one still waiting for its first outcome included.
    await expect.poll(() => subscribersOf("leave"), { timeout: 10_000 }).toBe(0);
  });
});
