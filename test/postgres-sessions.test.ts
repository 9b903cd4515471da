/**
 * Sessions across two hosts on one PostgreSQL database: a sign-out on host A ends the session on
 * host B too, its HTTP calls, its renewals and its open sockets (closed with 4001, as on one host),
 * because the sign-out commits in the deployment's own transaction, which every host hears of.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { localhostLookup, sendRequest } from "../cli/http.js";
import { EmailCodes } from "../host/auth/index.js";
import { HostDatabase } from "../host/db/index.js";
import { advisoryKey } from "../host/db/kv/postgres-locks.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { deferred } from "./helpers/deferred.js";
import { startTestHost, type TestHost } from "./helpers/host.js";
import { postgresForThisFile, postgresInstalled, recordQueries } from "./helpers/postgres.js";

const server = postgresForThisFile("Sessions across hosts");
let a: TestHost;
let b: TestHost;

beforeAll(async () => {
  if (!postgresInstalled) return;
  a = await startTestHost({ database: server.url, requestQuota: false });
  b = await startTestHost({ database: server.url, requestQuota: false });
  const deployed = await a.deployFixture("notes", "guest-upgrade");
  expect(deployed.status, deployed.text()).toBe(201);
}, 120_000);
afterAll(async () => {
  await a?.dispose();
  await b?.dispose();
});

async function post(host: TestHost, path: string, token?: string) {
  const response = await sendRequest(`${host.deploymentUrl("notes")}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: "{}",
  });
  return { status: response.status, body: response.json<Record<string, unknown>>() };
}

describe.skipIf(!postgresInstalled)("sign-in codes on PostgreSQL", () => {
  it("are sent for many deployments at once: no request holds two lock connections", async () => {
    // Each request holds its deployment's code lock (a connection of the host's 13 for locks);
    // one that took a second lock inside it for the address's mails left 13 requests each
    // holding one and waiting for another, for good, and every lock of the host with them.
    const db = await HostDatabase.open(server.url);
    try {
      const codes = new EmailCodes(db, { unsent: () => {} });
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          codes.start(`burst-${i}`, `burst${i}@example.com`, () => 0, "net"),
        ),
      );
      expect(answers.every((answer) => "attempt" in answer && answer.sent)).toBe(true);
    } finally {
      await db.close();
    }
  });
});

describe.skipIf(!postgresInstalled)("sign-in code requests over their client's limit", () => {
  it("are refused without waiting for the deployment's code lock or taking a lock connection", async () => {
    // Checked inside the lock, each refused request of a flood over many deployments waited for
    // and held a connection of the host's 13 for locks.
    const host = await startTestHost({ database: server.url, requestQuota: false });
    const other = await HostDatabase.open(server.url);
    const held = deferred();
    const release = deferred();
    try {
      expect((await host.deployFixture("codes", "guest-upgrade")).status).toBe(201);
      const ask = async (email: string) =>
        (
          await sendRequest(`${host.deploymentUrl("codes")}/__platform/auth/email/start`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email }),
          })
        ).status;
      const lockKey = String(advisoryKey("platform_kv", "email-codes:codes"));
      const lockedIn = (queries: Array<{ text: string }>) =>
        queries.filter((query) => query.text.includes(`pg_advisory_xact_lock(${lockKey}`)).length;
      // A request within the limit takes the lock (what the refusal below must not do).
      const first = recordQueries();
      try {
        expect(await ask("c0@example.com")).toBe(200);
      } finally {
        first.stop();
      }
      expect(lockedIn(first.queries)).toBe(1);
      for (let i = 1; i < LIMITS.emailCodeRequestsPerClient; i++)
        expect(await ask(`c${i}@example.com`)).toBe(200);
      // Another process holds the deployment's code lock (as a host answering a guess would).
      const holding = other.exclusive("email-codes:codes", async () => {
        held.resolve();
        await release.promise;
      });
      await held.promise;
      const { queries, stop } = recordQueries();
      let refused: number;
      try {
        refused = await ask("one-more@example.com");
      } finally {
        stop();
      }
      release.resolve();
      await holding;
      expect(refused).toBe(429);
      expect(lockedIn(queries)).toBe(0);
    } finally {
      release.resolve();
      await other.close();
      await host.dispose();
    }
  }, 60_000);
});

describe.skipIf(!postgresInstalled)("sessions on two hosts", () => {
  it("ends a socket on host B that made no call, before B loaded the deployment", async () => {
    const c = await startTestHost({ database: server.url, requestQuota: false });
    try {
      const guest = await post(a, "/__platform/auth/guest");
      const token = guest.body.token as string;
      const url = `${c.deploymentUrl("notes").replace("http", "ws")}/api/sync?platform_token=${token}`;
      const socket = new WebSocket(url, { lookup: localhostLookup } as WebSocket.ClientOptions);
      const closed = new Promise<number>((resolve) => socket.once("close", (code) => resolve(code)));
      await new Promise((resolve, reject) => {
        socket.once("open", resolve);
        socket.once("error", reject);
      });
      expect((await post(a, "/__platform/auth/sign-out", token)).status).toBe(200);
      expect(await closed).toBe(4001);
    } finally {
      await c.dispose();
    }
  }, 60_000);

  it("a sign-out on host A ends the session on host B: HTTP, renewal and its open socket", async () => {
    const guest = await post(a, "/__platform/auth/guest");
    const token = guest.body.token as string;
    const url = `${b.deploymentUrl("notes").replace("http", "ws")}/api/sync?platform_token=${token}`;
    const socket = new WebSocket(url, { lookup: localhostLookup } as WebSocket.ClientOptions);
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once("close", (code, reason) => resolve({ code, reason: String(reason) })),
    );
    await new Promise((resolve, reject) => {
      socket.once("open", resolve);
      socket.once("error", reject);
    });
    expect((await post(b, "/api/query/mustBeSomeone", token)).status).toBe(200);

    expect(await post(a, "/__platform/auth/sign-out", token)).toEqual({
      status: 200,
      body: { signedOut: true },
    });
    expect(await closed).toEqual({ code: 4001, reason: "session ended: sign in again" });
    expect((await post(b, "/api/query/mustBeSomeone", token)).body).toEqual({
      error: { code: "unauthorized", message: "This session was signed out; sign in again." },
    });
    expect((await post(b, "/__platform/auth/renew", token)).status).toBe(401);
  }, 60_000);
});
