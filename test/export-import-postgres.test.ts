/**
 * Export and import of one deployment on PostgreSQL (a real server on loopback, started privately by
 * scripts/local-postgres.ts): the shared round-trip suite, and an archive moving between backends
 * and hosts sharing the database.
 */
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import {
  answer,
  developerWithBigDeployment,
  dumpDeployment,
  exportZip,
  importZip,
  startUnreadExport,
} from "./helpers/export-import.js";
import { exportImportSuite } from "./helpers/export-import-suite.js";
import { fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";
import { postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL tests");

/**
 * `host`'s answer to query `name` of `id` once it is `expected`, or its last answer after 10 s:
 * another host's change reaches `host` with a broadcast, a moment after it committed.
 */
async function answerOnceTaken(host: TestHost, id: string, name: string, expected: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const got = await answer(host, id, name);
    if (got === expected || Date.now() > deadline) return got;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!postgresInstalled)("PostgreSQL", () => {
  exportImportSuite("PostgreSQL", () => startTestHost({ database: server.url }));

  it("moves a deployment between backends, and a host sharing the database serves the import", async () => {
    const a = await startTestHost({ database: server.url });
    const b = await startTestHost({ database: server.url });
    const embedded = await startTestHost();
    try {
      expect((await a.deployCode("moving", await fixtureCode("transfer"))).status).toBe(201);
      const owner = (
        await a.call("moving", "mutation", "addOwner", { name: "Ada", account: "acct:a" })
      ).json<{
        value: string;
      }>().value;
      await a.call("moving", "mutation", "seed", { owner, from: 0, count: 200 });
      // Host b serves the target first, so it holds a loaded (empty) deployment when a imports into it.
      expect((await b.deployCode("target", await fixtureCode("transfer"))).status).toBe(201);
      expect(await answer(b, "target", "counts")).toContain('"items":0');
      const archive = (await exportZip(a, "moving")).body;
      expect((await importZip(a, "target", archive)).status).toBe(200);
      // Host b takes the imported schema when a's broadcast reaches it (docs/operators.md,
      // "Several hosts"): a query it runs before that still reads with the schema it had.
      const expected = await answer(a, "moving", "counts");
      expect(await answerOnceTaken(b, "target", "counts", expected)).toBe(expected);
      expect(await answer(b, "target", "byOwner", { owner })).toBe(
        await answer(a, "moving", "byOwner", { owner }),
      );
      // The same archive on the embedded store gives the same bytes.
      expect((await importZip(embedded, "moving", archive)).status).toBe(200);
      expect(await dumpDeployment(embedded.database, "moving")).toEqual(
        await dumpDeployment(a.database, "moving"),
      );
    } finally {
      await a.dispose();
      await b.dispose();
      await embedded.dispose();
    }
  }, 120_000);

  it("holds no transaction open while an export's client reads slowly", async () => {
    // An open snapshot keeps PostgreSQL from cleaning up any tenant's dead rows (they share one
    // table): a client reading 64 KiB every two minutes kept one for the export's half hour.
    const host = await startTestHost({ database: server.url });
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      const ann = await developerWithBigDeployment(host, "ann", "slowreader");
      const unread = await startUnreadExport(host, "slowreader", ann.token);
      expect(unread.statusCode).toBe(200);
      const holdingSnapshots = async () =>
        (
          await client.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()",
          )
        ).rows[0]?.n;
      // The host is otherwise idle: no connection of it stays in a transaction.
      await vi.waitFor(async () => expect(await holdingSnapshots()).toBe(0), {
        timeout: 20_000,
        interval: 200,
      });
      expect(unread.complete).toBe(false);
      unread.destroy();
    } finally {
      await client.end();
      await host.dispose();
    }
  }, 120_000);
});
