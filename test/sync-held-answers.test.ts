/**
 * A mutation's answer over the sync socket waits for the pushes its write caused (read-your-writes),
 * and the host holds it meanwhile: those held are bounded per client address and in all, and an
 * answer beyond them goes at once, ahead of its pushes (an attack review: a client subscribed to a
 * slow query, sending mutations that answer 8 Mi characters each, had one socket hold 532 MiB).
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { KvSnapshot } from "../host/db/kv/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { deferred } from "./helpers/deferred.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { connectSync, type SyncSocket } from "./helpers/sync-socket.js";

const APP = `
import { capsule, number, table } from "platform/server";
export default capsule({
  schema: { entries: table({ n: number() }) },
  queries: { count: async (ctx) => ctx.db.entries.count() },
  mutations: {
    big: async (ctx, args: { chars: number }) => {
      await ctx.db.entries.insert({ n: 1 });
      return "x".repeat(args.chars);
    },
  },
});
`;

let host: TestHost;
beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployCode("held", await sourceCode(APP))).status).toBe(201);
});
afterAll(() => host.dispose());

it("holds answers waiting for their pushes up to the client's share, and sends the rest at once", async () => {
  // Five sockets of one client address, each subscribed to the same query (one shared run).
  const sockets = await Promise.all([1, 2, 3, 4, 5].map(() => connectSync(host.deploymentUrl("held"))));
  for (const socket of sockets) {
    socket.subscribe("count", "count", {});
    expect(await socket.next((m) => m.id === "count")).toMatchObject({ type: "value", value: 0 });
  }
  // The query's re-runs wait for their snapshot until the gate opens: the subscription is busy
  // running, and each answer would wait for it. Mutations write on snapshots of their own.
  const gate = deferred();
  const store = host.database.store;
  const readSnapshot = store.readSnapshot.bind(store);
  store.readSnapshot = async (owner?: string): Promise<KvSnapshot> => {
    await gate.promise;
    return readSnapshot(owner);
  };
  try {
    // Each answer a quarter of the client's share (the JSON's quotes included): four are held,
    // and whichever comes fifth goes at once, the query not having run again.
    const chars = LIMITS.syncAnswersHeldCharsPerClient / 4 - 2;
    const answers = sockets.map((socket) => socket.mutation("m", "big", { chars }));
    await vi.waitFor(() => expect(sockets.filter((socket) => socket.of("m").length > 0)).toHaveLength(1), {
      timeout: 30_000,
    });
    const [beyond] = sockets.filter((socket) => socket.of("m").length > 0) as [SyncSocket];
    expect(beyond.of("m")[0]?.value).toHaveLength(chars);
    expect(beyond.of("count")).toHaveLength(1);
    // Those within the share still wait for the push their writes caused.
    const within = sockets.filter((socket) => socket !== beyond);
    for (const socket of within) expect(socket.of("m")).toEqual([]);
    gate.resolve();
    await Promise.all(answers);
    for (const socket of within) {
      expect(socket.of("m")[0]?.value).toHaveLength(chars);
      const push = socket.messages.findLastIndex((m) => m.id === "count");
      expect(push).toBeLessThan(socket.messages.findIndex((m) => m.id === "m"));
      expect(socket.messages[push]).toMatchObject({ type: "value", value: 5 });
    }
  } finally {
    gate.resolve();
    store.readSnapshot = readSnapshot;
    for (const socket of sockets) socket.ws.close();
  }
});
