/**
 * A database that stops answering without closing a connection (a frozen server, a network that
 * drops everything): a whole host on a real PostgreSQL whose processes are stopped (SIGSTOP).
 * Mutations are answered `503 unavailable` once they have waited their bound (they never ran),
 * queries `504 timeout` at their wall-clock limit, saying they waited for the database; the
 * readiness probe fails, and everything goes on once the database answers again.
 */
import { describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { LIMITS } from "../sdk/protocol/index.js";
import { startTestHost } from "./helpers/host.js";
import { postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("The frozen-database tests");

describe.skipIf(!postgresInstalled)("a PostgreSQL server that stops answering", () => {
  it("answers mutations 503 unavailable within their bound, queries 504 at their wall time, and fails readiness; nothing is written, and all goes on when it answers", async () => {
    const host = await startTestHost({
      database: server.url,
      databaseQuota: { mutationWaitMs: 1000 },
      pool: {
        limits: {
          cpuMs: LIMITS.handlerCpuMs,
          wallMs: 2000,
          memoryMb: LIMITS.isolateMemoryMb,
          resultBytes: LIMITS.resultBytes,
        },
      },
    });
    try {
      expect((await host.deployFixture("frozen", "todo")).status).toBe(201);
      expect((await host.call("frozen", "mutation", "add", { text: "before" })).status).toBe(200);
      await server.freeze();
      try {
        const adds = await Promise.all(
          ["one", "two"].map((text) => host.call("frozen", "mutation", "add", { text })),
        );
        for (const add of adds) {
          expect(add.status).toBe(503);
          expect(add.headers["retry-after"]).toBe("1");
          const { error } = add.json() as { error: { code: string; message: string } };
          expect(error.code).toBe("unavailable");
          expect(error.message).toContain("did not run: nothing was written");
        }
        const count = await host.call("frozen", "query", "count");
        expect(count.status).toBe(504);
        expect(count.json()).toEqual({
          error: {
            code: "timeout",
            message:
              "The handler did not finish within 2000 ms and was stopped while it waited for the database or another platform call it made (busy, or not answering). Retry later.",
          },
        });
        expect((await sendRequest(`${host.url}/readyz`)).status).toBe(503);
        expect((await sendRequest(`${host.url}/healthz`)).status).toBe(200);
      } finally {
        await server.thaw();
      }
      // Neither ran, then or since; the next mutation runs.
      expect((await host.call("frozen", "query", "count")).json()).toEqual({ value: 1 });
      expect((await host.call("frozen", "mutation", "add", { text: "after" })).status).toBe(200);
      expect((await host.call("frozen", "query", "count")).json()).toEqual({ value: 2 });
      expect((await sendRequest(`${host.url}/readyz`)).status).toBe(200);
    } finally {
      await host.dispose();
    }
  }, 60_000);
});
