/**
 * Live queries whose runs fail, on both backends (classic-level, and PostgreSQL when installed):
 * the error is the subscription's state like a value is, over `GET /api/sync` and through
 * `platform/client` (the cases are in helpers/live-error-suite.ts); and an error pushed while the
 * caller is over its request quota is not overtaken by the value held back before it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalPostgres, postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { startTestHost, type TestHost } from "./helpers/host.js";
import { liveErrorSuite } from "./helpers/live-error-suite.js";
import { connectSync } from "./helpers/sync-socket.js";

liveErrorSuite("live query errors on classic-level", () => startTestHost({ requestQuota: false }));

const installed = postgresBinDir() !== undefined;
describe.skipIf(!installed)("PostgreSQL", () => {
  let server: LocalPostgres;
  beforeAll(async () => {
    server = await startLocalPostgres();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });
  liveErrorSuite("live query errors on PostgreSQL", () =>
    startTestHost({ database: server.url, requestQuota: false }),
  );
});

describe("live query errors over a caller's request quota", () => {
  let host: TestHost;
  beforeAll(async () => {
    host = await startTestHost({ requestQuota: { perSecond: 1, burst: 1 } });
    expect((await host.deployFixture("held", "live-errors")).status).toBe(201);
  });
  afterAll(() => host?.dispose());

  it("an error replaces the value held back for its subscription: the stale value never follows it", async () => {
    // Writes go straight to the deployment: only the socket's caller spends its quota.
    const mutate = async (name: string, args: unknown) => {
      await host.deployments.call("held", {
        kind: "mutation",
        name,
        argsJson: JSON.stringify(args),
        identity: null,
      });
      await host.live.settled();
    };
    const socket = await connectSync(host.deploymentUrl("held"));
    try {
      // The initial value takes the caller's one request; the next result waits for a refill.
      socket.subscribe("q", "checked", { bucket: 1 });
      await socket.next((m) => m.id === "q");
      await mutate("add", { bucket: 1, text: "x" });
      await mutate("add", { bucket: 1, text: "boom" });
      await socket.next((m) => m.id === "q" && m.type === "error");
      // A mutation over the socket sends whatever is still held before its answer.
      let answer = await socket.mutation("m0", "add", { bucket: 2, text: "barrier" });
      for (let i = 1; answer.error !== undefined; i++) {
        expect(answer.error).toMatchObject({ code: "limit_exceeded" });
        await new Promise((resolve) => setTimeout(resolve, 250));
        answer = await socket.mutation(`m${i}`, "add", { bucket: 2, text: "barrier" });
      }
      expect(socket.of("q").at(-1)).toMatchObject({ type: "error", error: { code: "handler_error" } });
    } finally {
      socket.ws.close();
    }
  });
});
