/**
 * A sync socket's token travels among its subprotocols (`platform-token.<token>` beside
 * `platform`), not in its URL, which proxies' access logs keep: a token read from a log could be
 * renewed into a fresh session for up to 30 days. The host selects `platform` and never echoes
 * the token; `?platform_token=` still works for older clients; both at once are refused.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup, sendRequest } from "../cli/http.js";
import type app from "../fixtures/live-app/server/index.js";
import { createClient, type PlatformClient } from "../sdk/client/node.js";
import { nodeTransport } from "../sdk/client/node-transport.js";
import { SYNC_PROTOCOL, syncProtocolsFor } from "../sdk/protocol/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
let token = "";
let userId = "";

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("board", "live-app")).status).toBe(201);
  const guest = (
    await sendRequest(`${host.deploymentUrl("board")}/__platform/auth/guest`, { method: "POST" })
  ).json<{ token: string; userId: string }>();
  token = guest.token;
  userId = guest.userId;
  expect(userId).toMatch(/./);
});
afterAll(() => host.dispose());

const syncUrl = (query = "") => `${host.deploymentUrl("board").replace("http", "ws")}/api/sync${query}`;

/** Opens a socket; resolves with what the upgrade answered (its status, its selected protocol). */
function upgrade(
  url: string,
  protocols: string[],
): Promise<{ status: number; protocol?: string; ws?: WebSocket }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols, { lookup: localhostLookup } as WebSocket.ClientOptions);
    ws.once("upgrade", (res) => {
      const selected = res.headers["sec-websocket-protocol"];
      ws.once("open", () => resolve({ status: 101, protocol: selected as string, ws }));
    });
    ws.once("unexpected-response", (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.once("error", () => {});
  });
}

/** The first answer to a subscription of `whoami` on `ws`. */
function whoami(ws: WebSocket): Promise<{ userId?: string } | null> {
  return new Promise((resolve) => {
    ws.on("message", (data) => {
      const message = JSON.parse(String(data)) as { id?: string; value?: { userId?: string } | null };
      if (message.id === "me") resolve(message.value ?? null);
    });
    ws.send(JSON.stringify({ type: "subscribe", id: "me", name: "whoami", args: {} }));
  });
}

it("takes the token from the socket's subprotocols, selecting `platform` and echoing no token", async () => {
  const protocols = syncProtocolsFor(token) as string[];
  expect(protocols).toEqual(["platform", SYNC_PROTOCOL, `platform-token.${token}`]);
  const opened = await upgrade(syncUrl(), protocols);
  expect([opened.status, opened.protocol]).toEqual([101, SYNC_PROTOCOL]);
  expect((await whoami(opened.ws as WebSocket))?.userId).toBe(userId);
  opened.ws?.close();
  // A wrong token there is refused as one in the URL is.
  expect((await upgrade(syncUrl(), ["platform", SYNC_PROTOCOL, "platform-token.nope"])).status).toBe(401);
});

it("refuses a socket carrying two tokens, and still takes one in the URL from older clients", async () => {
  const protocols = syncProtocolsFor(token) as string[];
  expect((await upgrade(syncUrl(`?platform_token=${token}`), protocols)).status).toBe(400);
  expect((await upgrade(syncUrl(), [...protocols, "platform-token.other"])).status).toBe(400);
  const older = await upgrade(syncUrl(`?platform_token=${token}`), []);
  expect(older.status).toBe(101);
  expect((await whoami(older.ws as WebSocket))?.userId).toBe(userId);
  older.ws?.close();
});

/** The first identity `client`'s live query `whoami` answers with, once it has a guest. */
async function identitySeenBy(client: PlatformClient<typeof app>): Promise<{ userId?: string } | null> {
  await client.auth.ready();
  return new Promise((resolve) => {
    const stop = client.subscribe("whoami", {}, (value) => {
      if (value) {
        stop();
        resolve(value as { userId?: string });
      }
    });
  });
}

it("the client sends its token among the subprotocols, never in the socket's URL", async () => {
  const opened: Array<{ url: string; protocols?: string[] }> = [];
  const base = nodeTransport().socket;
  const client = createClient<typeof app>(host.deploymentUrl("board"), {
    transport: {
      socket: (url, protocols) => {
        opened.push({ url, ...(protocols ? { protocols } : {}) });
        return base(url, protocols);
      },
    },
  });
  try {
    expect((await identitySeenBy(client))?.userId).toMatch(/./);
    expect(opened.length).toBeGreaterThan(0);
    for (const each of opened) {
      expect(each.url).not.toContain("platform_token");
      expect(each.protocols?.slice(0, 2)).toEqual(["platform", SYNC_PROTOCOL]);
      expect(each.protocols?.[2]).toMatch(/^platform-token\./);
    }
  } finally {
    client.close();
  }
});

/**
 * The URLs a client opened its sockets at, when `offer` decides what its socket offers of the
 * subprotocols the client asked for; asserts the client was itself (its token reached the host).
 */
async function urlsOpenedWith(offer: (protocols: string[] | undefined) => string[] | undefined) {
  const opened: string[] = [];
  const base = nodeTransport().socket;
  const client = createClient<typeof app>(host.deploymentUrl("board"), {
    transport: {
      socket: (url, protocols) => {
        opened.push(url);
        return base(url, offer(protocols));
      },
    },
  });
  try {
    expect((await identitySeenBy(client))?.userId).toMatch(/./);
    return opened;
  } finally {
    client.close();
  }
}

it("the client puts its token in the URL when the host selected no protocol of its (an older host), and is still itself", async () => {
  // A host before this change selected the first protocol offered and read no token there: the
  // socket opened as nobody. Here a factory that drops the protocols stands for it.
  const opened = await urlsOpenedWith(() => undefined);
  expect(opened[0]).not.toContain("platform_token");
  expect(opened.at(-1)).toContain("platform_token=");
});

it("a Node client whose upgrade got no protocol selected (a proxy dropping the header) puts its token in the URL", async () => {
  // `ws` fails such an upgrade before it opens: the client retried forever with the same protocols.
  const opened = await urlsOpenedWith((protocols) => (protocols ? ["not-ours"] : undefined));
  expect(opened[0]).not.toContain("platform_token");
  expect(opened.at(-1)).toContain("platform_token=");
});
