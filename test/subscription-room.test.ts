/**
 * A deployment's room for subscriptions, tried as an attacker would: a few client addresses fill
 * it on purpose (before, four addresses' 16 MiB each refused every other client's subscriptions to
 * that app for as long as they stayed), and platform/client, refused, subscribes again by itself
 * (before, its subscription showed the refusal until the page reloaded). Real host behind a
 * trusted proxy (each client posing as the address the proxy appended), real sockets, real
 * isolates; the room is made four subscriptions small.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup } from "../cli/http.js";
import { SYNC_LIMITS } from "../host/http/sync-messages.js";
import { createClient, type PlatformClient } from "../sdk/client/node.js";
import { nodeTransport } from "../sdk/client/node-transport.js";
import type { SocketLike } from "../sdk/client/transport.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { connectSync, type SyncMessage, type SyncSocket } from "./helpers/sync-socket.js";

const CAPSULE = `import { capsule, table, number, query, mutation } from "platform/server";
export default capsule({
  schema: { rows: table({ n: number() }).index("by_n", ["n"]) },
  queries: {
    byN: query(async (ctx, args) => (await ctx.db.rows.withIndex("by_n", (q) => q.eq("n", args.n)).collect()).length),
  },
  mutations: {
    add: mutation(async (ctx, args) => { await ctx.db.rows.insert({ n: args.n }); return null; }),
  },
});
`;

const limits = SYNC_LIMITS as { deploymentArgsBytes: number; fullRetryAfterSeconds: number };
const saved = { ...limits };
const hostLimits = LIMITS as { heldStalledMs: number };
const savedStalledMs = LIMITS.heldStalledMs;
let host: TestHost;
const sockets: SyncSocket[] = [];
const clients: PlatformClient[] = [];

beforeAll(async () => {
  host = await startTestHost({ trustProxy: true });
  expect((await host.deployCode("room", await sourceCode(CAPSULE))).status).toBe(201);
}, 60_000);
beforeEach(() => {
  limits.deploymentArgsBytes = 4 * SYNC_LIMITS.subscriptionBytesAtLeast;
  limits.fullRetryAfterSeconds = 1;
  // Nothing gives way until a test says so (`oldGiveWay`), however slow the machine.
  hostLimits.heldStalledMs = 3_600_000;
});
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const socket of sockets.splice(0)) {
    if (socket.ws.readyState === WebSocket.CLOSED) continue;
    const closed = new Promise((resolve) => socket.ws.once("close", resolve));
    socket.ws.close();
    await closed;
  }
  Object.assign(limits, saved);
  hostLimits.heldStalledMs = savedStalledMs;
});

/** From now on, subscriptions kept for 50 ms give way; returns once those made before have. */
async function oldGiveWay(): Promise<void> {
  hostLimits.heldStalledMs = 50;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
afterAll(async () => {
  await host.dispose();
});

/** A sync socket of the client at `address` (the proxy's `X-Forwarded-For` entry). */
async function clientAt(address: string): Promise<SyncSocket> {
  const socket = await connectSync(host.deploymentUrl("room"), { "x-forwarded-for": address });
  sockets.push(socket);
  return socket;
}

/** The first value or error about subscription `id`. */
const outcomeOf = (socket: SyncSocket, id: string) =>
  socket.next((m) => m.id === id && (m.type === "value" || m.type === "error"));

/**
 * Subscribes `socket` to four queries (of `n` from `first`, as `a1`...`a4`), filling the room,
 * and waits for their values (each test reads its own rows: the host keeps them between tests).
 */
async function fillRoom(socket: SyncSocket, first: number): Promise<void> {
  for (let i = 1; i <= 4; i++) {
    const n = first + i - 1;
    socket.subscribe(`a${i}`, "byN", { n });
    expect(await outcomeOf(socket, `a${i}`)).toMatchObject({ type: "value", value: 0 });
  }
}

/** platform/client as the client at `address`. */
function sdkAt(address: string): PlatformClient {
  const client = createClient(host.deploymentUrl("room"), {
    transport: {
      ...nodeTransport(),
      socket: (url) =>
        new WebSocket(url, {
          lookup: localhostLookup,
          headers: { "x-forwarded-for": address },
        } as WebSocket.ClientOptions) as unknown as SocketLike,
    },
  });
  clients.push(client);
  return client;
}

describe("a deployment's room for subscriptions", () => {
  it("takes, once full, the subscriptions of an address above an even share for another address's, oldest first", async () => {
    const attacker = await clientAt("203.0.113.5");
    await fillRoom(attacker, 1);
    const victim = await clientAt("198.51.100.5");
    // Not kept long enough yet: they do not give way.
    victim.subscribe("v1", "byN", { n: 9 });
    const refused = await outcomeOf(victim, "v1");
    expect(refused).toMatchObject({ type: "error", error: { code: "unavailable", retryAfterSeconds: 1 } });
    await oldGiveWay();
    victim.subscribe("v2", "byN", { n: 9 });
    expect(await outcomeOf(victim, "v2")).toMatchObject({ type: "value", value: 0 });
    // The attacker's oldest is ended, and told so with when to try again.
    const ended = await attacker.next((m) => m.id === "a1" && m.type === "error");
    expect(ended.error).toMatchObject({ code: "unavailable", retryAfterSeconds: 1 });
    // Above an even share, it cannot take it back.
    attacker.subscribe("again", "byN", { n: 1 });
    expect(await outcomeOf(attacker, "again")).toMatchObject({
      type: "error",
      error: { code: "unavailable" },
    });
    // What the ended subscription read changes: it gets nothing; the others still get theirs.
    await attacker.mutation("m1", "add", { n: 1 });
    await attacker.mutation("m2", "add", { n: 2 });
    expect(attacker.of("a1").filter((m: SyncMessage) => m.type === "value")).toEqual([
      { type: "value", id: "a1", value: 0 },
    ]);
    expect(attacker.of("a2").at(-1)).toEqual({ type: "value", id: "a2", value: 1 });
    // The victim stays subscribed.
    await victim.mutation("m3", "add", { n: 9 });
    expect(victim.of("v2").at(-1)).toEqual({ type: "value", id: "v2", value: 1 });
  });

  it("refuses an address holding its even share, as before", async () => {
    const first = await clientAt("203.0.113.6");
    await fillRoom(first, 11);
    await oldGiveWay();
    // The same address on another socket is the same client: nothing of its own gives way.
    const second = await clientAt("203.0.113.6");
    second.subscribe("b1", "byN", { n: 5 });
    expect(await outcomeOf(second, "b1")).toMatchObject({ type: "error", error: { code: "unavailable" } });
    expect(first.messages.filter((m) => m.type === "error")).toEqual([]);
  });
});

describe("platform/client refused for want of room", () => {
  it("subscribes again by itself after the host's retry-after, and shows the value once room frees", async () => {
    const attacker = await clientAt("203.0.113.7");
    await fillRoom(attacker, 21);
    const client = sdkAt("198.51.100.7");
    const outcomes: string[] = [];
    const stop = client.subscribe(
      "byN",
      { n: 27 },
      (value) => outcomes.push(`value ${value}`),
      (error) => outcomes.push(`error ${error.code}`),
    );
    // Refused at first (the attacker's subscriptions do not give way yet), then answered when it
    // subscribes again by itself: by then they do.
    await expect.poll(() => outcomes).toContain("error unavailable");
    await oldGiveWay();
    await expect.poll(() => outcomes, { timeout: 30_000 }).toContain("value 0");
    expect(outcomes).toEqual(["error unavailable", "value 0"]);
    stop();
  });

  it("subscribes again when another client's leaving frees the room", async () => {
    // Only one address holds the room: the client, as heavy as it once subscribed, takes nothing.
    const holder = await clientAt("203.0.113.8");
    await fillRoom(holder, 31);
    const client = sdkAt("203.0.113.8");
    const outcomes: string[] = [];
    client.subscribe(
      "byN",
      { n: 38 },
      (value) => outcomes.push(`value ${value}`),
      (error) => outcomes.push(`error ${error.code}`),
    );
    await expect.poll(() => outcomes).toContain("error unavailable");
    const closed = new Promise((resolve) => holder.ws.once("close", resolve));
    holder.ws.close();
    await closed;
    await expect.poll(() => outcomes, { timeout: 30_000 }).toContain("value 0");
  });

  it("keeps showing a value whose subscription the host ended for another client's, and subscribes again", async () => {
    // The client holds three of the room's four, another address the fourth.
    const client = sdkAt("198.51.100.41");
    const outcomes: string[] = [];
    for (const n of [41, 42, 43])
      client.subscribe(
        "byN",
        { n },
        (value) => outcomes.push(`${n}: value ${value}`),
        (error) => outcomes.push(`${n}: error ${error.code}`),
      );
    await expect.poll(() => outcomes.length).toBe(3);
    const other = await clientAt("198.51.100.42");
    other.subscribe("o1", "byN", { n: 44 });
    expect(await outcomeOf(other, "o1")).toMatchObject({ type: "value" });
    await oldGiveWay();
    // A third address, within an even share, ends the client's oldest (n = 41).
    const newcomer = await clientAt("198.51.100.43");
    newcomer.subscribe("c1", "byN", { n: 45 });
    expect(await outcomeOf(newcomer, "c1")).toMatchObject({ type: "value", value: 0 });
    // The client still shows 0 for n = 41 and no error; once the newcomer leaves, its retry gets
    // the room back, and a change of n = 41 shows.
    const closed = new Promise((resolve) => newcomer.ws.once("close", resolve));
    newcomer.ws.close();
    await closed;
    await other.mutation("m41", "add", { n: 41 });
    await expect.poll(() => outcomes, { timeout: 30_000 }).toContain("41: value 1");
    expect(outcomes.filter((outcome) => outcome.includes("error"))).toEqual([]);
  });
});
