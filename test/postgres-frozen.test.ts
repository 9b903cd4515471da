/**
 * A database that stops answering without closing a connection (a frozen server, a network that
 * drops everything): a whole host on a real PostgreSQL whose processes are stopped (SIGSTOP).
 * Mutations are answered `503 unavailable` once they have waited their bound (they never ran),
 * queries `504 timeout` at their wall-clock limit, saying they waited for the database; every read
 * or lock waiting on the database (a signed-in caller's session, a deploy's lock, the dashboard's
 * rows) `503 unavailable` once the host has found the server silent, and from then on every call
 * that would send something (a sign-in) at once. The readiness probe fails meanwhile, and
 * everything goes on once the database answers again.
 */
import { describe, expect, it } from "vitest";
import { type HttpResponse, sendRequest } from "../cli/http.js";
import { HostDatabase, PostgresKv } from "../host/db/index.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { deferred } from "./helpers/deferred.js";
import { counted, withCounter } from "./helpers/group-commit-suite.js";
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
        const [adds, count, redeploy, rows, signedInCount] = await Promise.all([
          Promise.all(["one", "two"].map((text) => host.call("frozen", "mutation", "add", { text }))),
          host.call("frozen", "query", "count"),
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
        // Found silent now: a sign-in, which writes its session, sends nothing and is answered at once.
        const guest = await app("/__platform/auth/guest");
        for (const response of [redeploy, rows, signedInCount, guest]) {
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
      // Once the host's next probe is answered (within a second or so), everything answers again.
      let ready = await sendRequest(`${host.url}/readyz`);
      for (let tries = 0; ready.status !== 200 && tries < 100; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        ready = await sendRequest(`${host.url}/readyz`);
      }
      expect(ready.status).toBe(200);
      // No mutation ran, then or since.
      expect((await host.call("frozen", "query", "count")).json()).toEqual({ value: 1 });
      expect((await host.call("frozen", "mutation", "add", { text: "after" })).status).toBe(200);
      expect((await host.call("frozen", "query", "count")).json()).toEqual({ value: 2 });
      expect((await app("/__platform/auth/guest")).status).toBe(200);
      expect((await host.deployFixture("frozen", "todo")).status).toBe(200);
      expect((await host.admin("/v1/deploys/frozen/tables/todos/rows", "GET")).status).toBe(200);
      expect((await signedIn()).status).toBe(200);
    } finally {
      await host.dispose();
    }
  }, 180_000);

  it("ends a read waiting on a silent server, but leaves a write in flight to wait: it lands, and its caller learns so, once the server answers", async () => {
    const kv = await PostgresKv.open(server.url, { table: freshTable(), silenceMs: 500 });
    const key = Buffer.from("written");
    try {
      // Connections open already: the read below is sent, and waits, rather than waiting to connect.
      await Promise.all(Array.from({ length: 4 }, () => kv.get(key)));
      await server.freeze();
      let thawed = false;
      let write: Promise<string> | undefined;
      try {
        write = kv.batch([{ type: "put", key, value: "v" }]).then(
          () => (thawed ? "landed after the thaw" : "answered while frozen"),
          (error: Error) => `failed: ${error.message}`,
        );
        const read = await kv.get(Buffer.from("other")).catch((error: { code?: string }) => error.code);
        expect(read).toBe("unavailable");
        // Found silent: a new read is answered at once, having sent nothing.
        expect(await kv.get(Buffer.from("other")).catch((error: { code?: string }) => error.code)).toBe(
          "unavailable",
        );
      } finally {
        thawed = true;
        await server.thaw();
      }
      expect(await write).toBe("landed after the thaw");
      expect(await kv.get(key)).toBe("v");
    } finally {
      await kv.close();
    }
  });

  it("tells a mutation whose commit was refused unsent, the server found silent, that nothing was written", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable(), silenceMs: 500 });
    const db = await HostDatabase.openStore(store, { mutationWaitMs: 60_000 });
    try {
      const deployment = await db.deployment("unsent");
      const counter = await withCounter(deployment);
      const gate = deferred();
      const hasRead = deferred();
      const mutation = deployment
        .mutate(async (tx) => {
          const row = JSON.parse((await tx.get("counters", counter)) as string) as { n: number };
          hasRead.resolve();
          await gate.promise;
          await tx.update("counters", counter, { n: row.n + 1 });
        })
        .then(
          () => "committed",
          (error: Error) => error.message,
        );
      await hasRead.promise;
      await server.freeze();
      try {
        // A read on another connection waits until the server is found silent.
        expect(await store.get(Buffer.from("other")).catch((error: { code?: string }) => error.code)).toBe(
          "unavailable",
        );
        gate.resolve();
        expect(await mutation).toBe(
          "The database did not answer within 0.5 s (busy, or not reachable). Retry later.",
        );
      } finally {
        await server.thaw();
      }
      let count = await counted(deployment, counter).catch(() => undefined);
      for (let tries = 0; count === undefined && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        count = await counted(deployment, counter).catch(() => undefined);
      }
      expect(count).toEqual({ n: 0, items: 0 });
    } finally {
      await db.close();
    }
  });

  it("answers a caller queued for a connection behind writes in flight once the server is found silent", async () => {
    const kv = await PostgresKv.open(server.url, { table: freshTable(), silenceMs: 500 });
    try {
      // The direct pool's 4 connections open, then each carries a write when the server freezes.
      await Promise.all(Array.from({ length: 4 }, () => kv.get(Buffer.from("x"))));
      await server.freeze();
      let writes: Promise<unknown> | undefined;
      try {
        writes = Promise.all(
          Array.from({ length: 4 }, (_, i) =>
            kv.batch([{ type: "put", key: Buffer.from(`w${i}`), value: "v" }]),
          ),
        );
        expect(await kv.get(Buffer.from("x")).catch((error: { code?: string }) => error.code)).toBe(
          "unavailable",
        );
      } finally {
        await server.thaw();
      }
      await writes;
      expect(await kv.get(Buffer.from("w3"))).toBe("v");
    } finally {
      await kv.close();
    }
  });

  it("leaves alone a round trip that waits for a lock another host holds while the server answers", async () => {
    const table = freshTable();
    const holder = await PostgresKv.open(server.url, { table });
    const waiter = await PostgresKv.open(server.url, { table, silenceMs: 1000 });
    try {
      const holding = deferred();
      const held = holder.bus.lockAcrossProcesses("shared", async () => {
        holding.resolve();
        // Many silences long: the watch asks the server, which answers, several times meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 3000));
      });
      await holding.promise;
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
