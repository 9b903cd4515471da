/**
 * A database that stops answering without closing a connection (a frozen server, a network that
 * drops everything): a whole host on a real PostgreSQL whose processes are stopped (SIGSTOP).
 * Mutations are answered `503 unavailable` once they have waited their bound (they never ran),
 * queries `504 timeout` at their wall-clock limit, saying they waited for the database; everything
 * else waiting on the database (a sign-in, a signed-in caller's session, a deploy, the dashboard's
 * rows) `503 unavailable` once the host has found the server silent. The readiness probe fails meanwhile, and everything goes
 * on once the database answers again.
 */
import { describe, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import { PostgresKv } from "../host/db/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { deployOwnedWithSession, startTestHost } from "./helpers/host.js";
import { freshTable, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("The frozen-database tests");

/** The error envelope of `response`, with its status. */
function failure(response: HttpResponse) {
  const { error } = response.json() as { error: { code: string; message: string } };
  return { status: response.status, code: error.code, message: error.message };
}

describe.skipIf(!postgresInstalled)("a PostgreSQL server that stops answering", () => {
  it("answers every caller within its bounds (mutations 503, queries 504, the rest 503) and fails readiness; nothing is written, and all goes on when it answers", async () => {
    const host = await startTestHost({
      database: server.url,
      // The query's wall time ends before the host finds the server silent: each bound shows alone.
      databaseQuota: { mutationWaitMs: 1000, silenceMs: 3000 },
      pool: {
        limits: {
          cpuMs: LIMITS.handlerCpuMs,
          wallMs: 1500,
          memoryMb: LIMITS.isolateMemoryMb,
          resultBytes: LIMITS.resultBytes,
        },
      },
    });
    const app = (path: string) =>
      sendRequest(`${host.deploymentUrl("frozen")}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
    try {
      expect((await host.deployFixture("frozen", "todo")).status).toBe(201);
      expect((await host.call("frozen", "mutation", "add", { text: "before" })).status).toBe(200);
      const token = await deployOwnedWithSession(host, "owned", "todo", "ada@example.com");
      const signedIn = () =>
        sendRequest(`${host.deploymentUrl("owned")}/api/query/count`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: "{}",
        });
      expect((await signedIn()).status).toBe(200);
      await server.freeze();
      try {
        const [adds, count, guest, redeploy, rows, signedInCount] = await Promise.all([
          Promise.all(["one", "two"].map((text) => host.call("frozen", "mutation", "add", { text }))),
          host.call("frozen", "query", "count"),
          app("/__platform/auth/guest"),
          host.deployFixture("frozen", "todo"),
          host.admin("/v1/deploys/frozen/tables/todos/rows", "GET"),
          signedIn(),
        ]);
        for (const add of adds) {
          expect(add.headers["retry-after"]).toBe("1");
          expect(failure(add)).toEqual({
            status: 503,
            code: "unavailable",
            message:
              "This mutation waited 1 s for the database (busy, or not answering) and did not run: nothing was written. Retry later.",
          });
        }
        expect(failure(count)).toEqual({
          status: 504,
          code: "timeout",
          message:
            "The handler did not finish within 1500 ms and was stopped while it waited for the database or another platform call it made (busy, or not answering). Retry later.",
        });
        for (const response of [guest, redeploy, rows, signedInCount]) {
          expect(response.headers["retry-after"]).toBe("1");
          expect(failure(response)).toEqual({
            status: 503,
            code: "unavailable",
            message: "The database did not answer within 3 s (busy, or not reachable). Retry later.",
          });
        }
        expect((await sendRequest(`${host.url}/readyz`)).status).toBe(503);
        expect((await sendRequest(`${host.url}/healthz`)).status).toBe(200);
      } finally {
        await server.thaw();
      }
      // No mutation ran, then or since; everything answers again (the pools make new connections).
      expect((await host.call("frozen", "query", "count")).json()).toEqual({ value: 1 });
      expect((await host.call("frozen", "mutation", "add", { text: "after" })).status).toBe(200);
      expect((await host.call("frozen", "query", "count")).json()).toEqual({ value: 2 });
      expect((await app("/__platform/auth/guest")).status).toBe(200);
      expect((await host.deployFixture("frozen", "todo")).status).toBe(200);
      expect((await host.admin("/v1/deploys/frozen/tables/todos/rows", "GET")).status).toBe(200);
      expect((await signedIn()).status).toBe(200);
      expect((await sendRequest(`${host.url}/readyz`)).status).toBe(200);
    } finally {
      await host.dispose();
    }
  }, 60_000);

  it("leaves alone a round trip that waits for a lock another host holds while the server answers", async () => {
    const table = freshTable();
    const holder = await PostgresKv.open(server.url, { table });
    const waiter = await PostgresKv.open(server.url, { table, silenceMs: 200 });
    try {
      let taken = () => {};
      const holding = new Promise<void>((resolve) => {
        taken = resolve;
      });
      const held = holder.bus.lockAcrossProcesses("shared", async () => {
        taken();
        // Many silences long: the watch asks the server, which answers, several times meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 1500));
      });
      await holding;
      const order: string[] = [];
      const waited = waiter.bus.lockAcrossProcesses("shared", async () => {
        order.push("waiter");
      });
      await held;
      order.push("holder released");
      await waited;
      expect(order).toEqual(["holder released", "waiter"]);
    } finally {
      await waiter.close();
      await holder.close();
    }
  });
});
