/**
 * What one client address may hold, tried as an attacker would: minting guests to multiply its
 * request quota (each guest has a quota of its own), opening sync sockets until the host runs out,
 * and rotating through the 2^64 IPv6 addresses of the network it was given.
 */
import { mkdtemp, rm } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup, sendRequest } from "../cli/http.js";
import { EmailCodes, type UnsentCode } from "../host/auth/index.js";
import { SESSION_USABLE_SECONDS } from "../host/auth/session-sweep.js";
import { HostDatabase } from "../host/db/index.js";
import { clientAddressKey, clientAddressOf } from "../host/http/client-address.js";
import { quotaKey } from "../host/http/request-quota.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("limits", "live")).status).toBe(201);
  expect((await host.deployFixture("neighbour", "live")).status).toBe(201);
});
afterAll(() => host.dispose());

describe("client address keys", () => {
  it("key an IPv6 address by its /64 network and an IPv4 one as it is, mapped or not", () => {
    expect(clientAddressKey("203.0.113.7")).toBe("203.0.113.7");
    expect(clientAddressKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(clientAddressKey("2001:db8:1:2:3:4:5:6")).toBe(clientAddressKey("2001:0db8:0001:0002::9"));
    expect(clientAddressKey("2001:db8:1:2::1")).not.toBe(clientAddressKey("2001:db8:1:3::1"));
    expect(clientAddressKey("::1")).toBe(clientAddressKey("0:0:0:0:0:0:0:1"));
    expect(clientAddressKey(undefined)).toBe("");
    // Two addresses of one /64 spend one request quota.
    expect(quotaKey("d", null, "2001:db8::1")).toBe(quotaKey("d", null, "2001:db8::ffff:1"));
  });
});

const guest = (deployment: string, forwardedFor?: string, on = host) =>
  sendRequest(`${on.deploymentUrl(deployment)}/__platform/auth/guest`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(forwardedFor ? { "x-forwarded-for": forwardedFor } : {}),
    },
    body: "{}",
  });

describe("guest sign-ins per client address", () => {
  it(`allow ${LIMITS.guestSignInsPerClient} new guests per deployment, then answer 429 with Retry-After`, async () => {
    const statuses: number[] = [];
    for (let i = 0; i < LIMITS.guestSignInsPerClient; i++) statuses.push((await guest("limits")).status);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const refused = await guest("limits");
    expect(refused.status).toBe(429);
    expect(refused.json<{ error: { code: string } }>().error.code).toBe("limit_exceeded");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    // Another app's guests are counted apart.
    expect((await guest("neighbour")).status).toBe(200);
    // A host not told to trust a proxy ignores X-Forwarded-For: the client cannot pose as another.
    expect((await guest("limits", "198.51.100.7")).status).toBe(429);
  }, 60_000);

  it("behind a trusted proxy, count each client by the address the proxy appended", async () => {
    const proxied = await startTestHost({ trustProxy: true });
    try {
      expect((await proxied.deployFixture("app", "live")).status).toBe(201);
      const statuses: number[] = [];
      for (let i = 0; i < LIMITS.guestSignInsPerClient; i++)
        statuses.push((await guest("app", `203.0.113.${i}, 198.51.100.1`, proxied)).status);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      // The entries before the proxy's are the client's own words: changing them changes nothing.
      expect((await guest("app", "192.0.2.55, 198.51.100.1", proxied)).status).toBe(429);
      expect((await guest("app", "198.51.100.2", proxied)).status).toBe(200);
    } finally {
      await proxied.dispose();
    }
  }, 60_000);
});

describe("OpenID Connect sign-ins per client address", () => {
  it(`allow ${LIMITS.oidcSignInsPerClient} per deployment, valid or not, then answer 429 with Retry-After`, async () => {
    // Each one that signs in stores a session: one caller's fresh tokens filled the disk.
    const oidc = () =>
      sendRequest(`${host.deploymentUrl("neighbour")}/__platform/auth/oidc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ idToken: "not.a.token" }),
      });
    const statuses: number[] = [];
    for (let i = 0; i < LIMITS.oidcSignInsPerClient; i++) statuses.push((await oidc()).status);
    expect(statuses.filter((status) => status !== 401)).toEqual([]);
    const refused = await oidc();
    expect(refused.status).toBe(429);
    expect(refused.json<{ error: { code: string } }>().error.code).toBe("limit_exceeded");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
  }, 60_000);
});

describe("the client address of a request", () => {
  const request = (peer: string, forwardedFor?: string | string[]) =>
    ({
      socket: { remoteAddress: peer },
      headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor },
    }) as unknown as IncomingMessage;

  it("is the socket's peer unless a proxy is trusted, then the last X-Forwarded-For entry", () => {
    expect(clientAddressOf(request("10.0.0.2", "1.2.3.4"), false)).toBe("10.0.0.2");
    expect(clientAddressOf(request("10.0.0.2", "1.2.3.4, 5.6.7.8"), true)).toBe("5.6.7.8");
    expect(clientAddressOf(request("10.0.0.2", ["1.2.3.4", "2001:db8::1"]), true)).toBe("2001:db8::1");
    expect(clientAddressOf(request("10.0.0.2"), true)).toBe("10.0.0.2");
    // Whatever is not an address falls back to the peer.
    expect(clientAddressOf(request("10.0.0.2", "1.2.3.4, not-an-address"), true)).toBe("10.0.0.2");
  });
});

/** Opens a sync socket; resolves with it open, or with the status its upgrade was refused with. */
function openSocket(deployment: string): Promise<WebSocket | number> {
  const ws = new WebSocket(`${host.deploymentUrl(deployment).replace("http", "ws")}/api/sync`, {
    lookup: localhostLookup,
  } as WebSocket.ClientOptions);
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_request, response) => {
      resolve(response.statusCode ?? 0);
      ws.terminate();
    });
    ws.once("error", reject);
  });
}

describe("sync sockets per client address", () => {
  it(`hold ${LIMITS.syncSocketsPerClient} open across deployments, refuse more with 429, and free one on close`, async () => {
    const sockets: WebSocket[] = [];
    try {
      for (let i = 0; i < LIMITS.syncSocketsPerClient; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(50, LIMITS.syncSocketsPerClient - i) }, (_, j) =>
            openSocket((i + j) % 2 === 0 ? "limits" : "neighbour"),
          ),
        );
        for (const opened of batch) {
          if (typeof opened === "number") throw new Error(`socket ${sockets.length} was refused: ${opened}`);
          sockets.push(opened);
        }
      }
      // Concurrent upgrades past the limit: none gets in.
      const extra = await Promise.all([openSocket("limits"), openSocket("neighbour"), openSocket("limits")]);
      expect(extra).toEqual([429, 429, 429]);
      const closed = sockets.pop() as WebSocket;
      await new Promise((resolve) => {
        closed.once("close", resolve);
        closed.close();
      });
      // The server counts the socket free once its end closes too: wait for that, however long.
      let again = await openSocket("limits");
      for (let tries = 0; typeof again === "number" && tries < 1500; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        again = await openSocket("limits");
      }
      expect(typeof again).not.toBe("number");
      sockets.push(again as WebSocket);
    } finally {
      for (const ws of sockets) ws.terminate();
    }
  }, 120_000);
});

describe("ended sessions", () => {
  it("are deleted once no token of theirs can be used; the account stays an account", async () => {
    const guestToken = await host.auth.signInGuest("limits");
    const account = await host.auth.signInAccount("limits", "kept@example.com");
    // Now, and up to the last moment a renewed token could be valid (plus the hosts' clock
    // margin), nothing is deleted and both tokens work.
    expect(await host.auth.sweepEndedSessions()).toBe(0);
    expect(await host.auth.sweepEndedSessions(Date.now() + SESSION_USABLE_SECONDS * 1000)).toBe(0);
    expect((await host.auth.authenticate("limits", guestToken.token)).userId).toBe(guestToken.userId);
    expect((await host.auth.authenticate("limits", account.token)).userId).toBe(account.userId);
    const swept = await host.auth.sweepEndedSessions(
      Date.now() + (SESSION_USABLE_SECONDS + 2 * 86_400) * 1000,
    );
    // This guest and account, and the 100 guests of the sign-in limit above: minted in a loop
    // (by a developer, or by replaying one OIDC ID token), they were kept for good before.
    expect(swept).toBeGreaterThanOrEqual(2);
    for (const token of [guestToken.token, account.token])
      await expect(host.auth.authenticate("limits", token)).rejects.toMatchObject({ code: "unauthorized" });
    expect(await host.auth.accountExists("limits", "kept@example.com")).toBe(true);
  });

  it("deletes a signed-out session a day after its sign-out", async () => {
    const account = await host.auth.signInAccount("limits", "leaving@example.com");
    const signedOut = await sendRequest(`${host.deploymentUrl("limits")}/__platform/auth/sign-out`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.token}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(signedOut.status, signedOut.text()).toBeLessThan(300);
    expect(await host.auth.sweepEndedSessions(Date.now() + 3_600_000)).toBe(0);
    expect(await host.auth.sweepEndedSessions(Date.now() + 2 * 86_400_000)).toBe(1);
    expect(await host.auth.accountExists("limits", "leaving@example.com")).toBe(true);
  });
});

describe("ended email sign-in codes", () => {
  it("are deleted once used or expired and out of the request window; live ones stay and work", async () => {
    const dir = await mkdtemp(join(tmpdir(), "code-sweep-"));
    const db = await HostDatabase.open(dir);
    try {
      const sent: UnsentCode[] = [];
      const codes = new EmailCodes(db, { unsent: (code) => sent.push(code) });
      const attempts: string[] = [];
      for (const email of ["a@example.com", "b@example.com", "c@example.com"]) {
        const request = await codes.start("app", email, () => 0);
        if (!("attempt" in request)) throw new Error("refused");
        attempts.push(request.attempt);
      }
      await codes.verify("app", "a@example.com", sent[0]?.code, attempts[0]);
      // Within the request window nothing goes: the window's count must hold.
      expect(await codes.sweepEnded()).toBe(0);
      const later = Date.now() + LIMITS.emailCodeWindowSeconds * 1000 + 1000;
      expect(await codes.sweepEnded(later)).toBe(3);
      // A code asked for after the sweep works.
      const again = await codes.start("app", "b@example.com", () => 0);
      if (!("attempt" in again)) throw new Error("refused");
      expect(await codes.sweepEnded()).toBe(0);
      await codes.verify("app", "b@example.com", sent[3]?.code, again.attempt);
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
