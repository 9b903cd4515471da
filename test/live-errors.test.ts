/**
 * Live queries whose runs fail, on both backends (classic-level, and PostgreSQL when installed):
 * the error is the subscription's state like a value is, over `GET /api/sync` and through
 * `platform/client`. The cases are in helpers/live-error-suite.ts.
 */
import { afterAll, beforeAll, describe } from "vitest";
import { type LocalPostgres, postgresBinDir, startLocalPostgres } from "../scripts/local-postgres.js";
import { startTestHost } from "./helpers/host.js";
import { liveErrorSuite } from "./helpers/live-error-suite.js";

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
