/**
 * What one client address may take of a deployment's shared resources over sync sockets, tried as
 * an attacker would: subscribing to a large public query with ever new arguments (before, 40 such
 * subscriptions filled the deployment's whole live state and every other user got
 * `limit_exceeded`), spreading its messages over the addresses of its IPv6 /64 (each counted
 * apart before, so each brought a budget of its own), and opening sockets as fast as it can (their
 * token checks cost nothing of its request quota before). Real host behind a trusted proxy (each
 * client posing as the address the proxy appended), real sockets, real isolates.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup } from "../cli/http.js";
import { SYNC_LIMITS } from "../host/http/sync-messages.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { connectSync, type SyncMessage, type SyncSocket } from "./helpers/sync-socket.js";

const CAPSULE = `import { capsule, table, number } from "platform/server";
export default capsule({
  schema: { rows: table({ n: number() }).index("by_n", ["n"]) },
  queries: {
    big: async (ctx, args) => {
      const row = await ctx.db.rows.withIndex("by_n", (q) => q.eq("n", args.n)).first();
      return (row ? "found " : "") + "x".repeat(args.size);
    },
  },
});
`;

/** A result of 4 MB: 40 of them pass the deployment's live state, 9 a client's share of it. */
const SIZE = 4_000_000;

let host: TestHost;
const sockets: SyncSocket[] = [];

beforeAll(async () => {
  host = await startTestHost({ trustProxy: true });
  expect((await host.deployCode("shares", await sourceCode(CAPSULE))).status).toBe(201);
}, 60_000);
afterAll(async () => {
  for (const socket of sockets) socket.ws.terminate();
  await host.dispose();
});

/** A sync socket of the client at `address` (the proxy's `X-Forwarded-For` entry). */
async function clientAt(address: string): Promise<SyncSocket> {
  const socket = await connectSync(host.deploymentUrl("shares"), { "x-forwarded-for": address });
  sockets.push(socket);
  return socket;
}

/** The first value or error about subscription `id`. */
const outcomeOf = (socket: SyncSocket, id: string) =>
  socket.next((m) => m.id === id && (m.type === "value" || m.type === "error"));

describe("a client's share of the deployment's live state", () => {
  it("is all that client's subscriptions with ever new arguments fill; another client is answered", async () => {
    expect(LIMITS.liveStateBytesPerClient * 4).toBeLessThanOrEqual(LIMITS.liveStateBytes);
    const attacker = await clientAt("203.0.113.9");
    const outcomes: SyncMessage[] = [];
    for (let i = 0; i < 40; i++) {
      attacker.subscribe(`a${i}`, "big", { n: i, size: SIZE });
      outcomes.push(await outcomeOf(attacker, `a${i}`));
    }
    const kept = outcomes.filter((m) => m.type === "value").length;
    expect(kept).toBe(Math.floor(LIMITS.liveStateBytesPerClient / (SIZE + 2)));
    const refused = outcomes.filter((m) => m.type === "error");
    expect(refused).toHaveLength(40 - kept);
    for (const message of refused)
      expect(message.error).toMatchObject({
        code: "limit_exceeded",
        message: expect.stringContaining(
          "The live queries each client subscribed to this one started hold more than",
        ),
      });

    // Another client subscribing to large results of its own is answered, as before the attack.
    const victim = await clientAt("198.51.100.7");
    for (let i = 0; i < 3; i++) {
      victim.subscribe(`v${i}`, "big", { n: 1000 + i, size: SIZE });
      const outcome = await outcomeOf(victim, `v${i}`);
      expect(outcome.type, JSON.stringify(outcome.error)).toBe("value");
      expect((outcome.value as string).length).toBe(SIZE);
    }
    attacker.ws.close();
    victim.ws.close();
  }, 120_000);
});

describe("a client's inbound budget", () => {
  it("is shared by the addresses of its IPv6 /64, not renewed by each", async () => {
    // Four addresses of one /64, each sending a third of the budget and more.
    const share = Math.ceil(SYNC_LIMITS.inboundBurstBytes / 3);
    const pad = "p".repeat(256 * 1024);
    const message = JSON.stringify({ type: "unsubscribe", id: "none", pad });
    const closed: number[] = [];
    for (let i = 1; i <= 4; i++) {
      const socket = await clientAt(`2001:db8:5:6::${i}`);
      socket.ws.on("close", (code) => closed.push(code));
      for (let sent = 0; sent < share; sent += message.length) socket.ws.send(message);
    }
    await expect.poll(() => closed, { timeout: 30_000 }).toContain(1008);
    // An address of another /64 is another client: its budget is whole.
    const other = await clientAt("2001:db8:5:7::1");
    for (let sent = 0; sent < share; sent += message.length) other.ws.send(message);
    other.subscribe("after", "big", { n: 1, size: 10 });
    expect((await outcomeOf(other, "after")).type).toBe("value");
  }, 60_000);
});

/**
 * Upgrades to `url`'s sync endpoint as the client at `address`: the open socket (closed at once),
 * or the refusal's status and `Retry-After`.
 */
function upgradeAs(
  url: string,
  address: string,
): Promise<{ status: number; retryAfter?: string | undefined }> {
  const ws = new WebSocket(url, {
    lookup: localhostLookup,
    headers: { "x-forwarded-for": address },
  } as WebSocket.ClientOptions);
  return new Promise((resolve, reject) => {
    ws.once("open", () => {
      resolve({ status: 101 });
      ws.terminate();
    });
    ws.once("unexpected-response", (_request, response) => {
      resolve({ status: response.statusCode ?? 0, retryAfter: response.headers["retry-after"] });
      ws.terminate();
    });
    ws.once("error", reject);
  });
}

describe("a client's upgrades", () => {
  it("cost it a request each, all deployments together, before anything is looked up; another client's are not refused", async () => {
    const limited = await startTestHost({ trustProxy: true, requestQuota: { perSecond: 0.01, burst: 3 } });
    try {
      expect((await limited.deployCode("shares", await sourceCode(CAPSULE))).status).toBe(201);
      const url = `${limited.deploymentUrl("shares").replace("http", "ws")}/api/sync`;
      const opened = [];
      for (let i = 0; i < 3; i++) opened.push((await upgradeAs(url, "203.0.113.20")).status);
      expect(opened).toEqual([101, 101, 101]);
      // A forged token is refused before it is checked: the check would cost the host's time.
      const refused = await upgradeAs(`${url}?platform_token=forged`, "203.0.113.20");
      expect(refused.status).toBe(429);
      expect(Number(refused.retryAfter)).toBeGreaterThan(0);
      expect((await upgradeAs(url, "203.0.113.20")).status).toBe(429);
      // One bucket for every deployment, looked up or not: naming others does not renew it.
      expect((await limited.deployCode("other", await sourceCode(CAPSULE))).status).toBe(201);
      for (const name of ["other", "nothing-here"]) {
        const elsewhere = `${limited.deploymentUrl(name).replace("http", "ws")}/api/sync`;
        expect((await upgradeAs(elsewhere, "203.0.113.20")).status).toBe(429);
      }
      expect((await upgradeAs(url, "203.0.113.21")).status).toBe(101);
      expect((await upgradeAs(`${url}?platform_token=forged`, "203.0.113.22")).status).toBe(401);
    } finally {
      await limited.dispose();
    }
  }, 60_000);
});
