/**
 * A host that fails to start stops what it had started. It opened its database and its
 * deployments (their isolate pool, and on PostgreSQL the periodic check of the records' stamps)
 * before its blob store and the clean-ups of interrupted removals and imports; when one of those
 * failed, the stamps' unref'd timer kept querying a store nobody closed, and the store's
 * connections and listener stayed open for the process's life.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { startHost } from "../host/index.js";
import { until } from "./helpers/arrivals.js";
import { postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("The test of a host failing to start");

/** Connections to the server other than the asking one's. */
async function otherConnections(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
  );
  return rows[0]?.n ?? 0;
}

describe.skipIf(!postgresInstalled)("a host failing to start", () => {
  it("leaves no periodic check running and no connection to its database when its blob store fails to open", async () => {
    const data = await mkdtemp(join(tmpdir(), "platform-start-failure-"));
    // The blob store's folder is a file: opening it fails once the database and deployments are up.
    await writeFile(join(data, "blobs"), "not a folder");
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    // Only intervals are faked: the count says which periodic work was left behind.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const starting = startHost({
        data,
        database: server.url,
        port: 0,
        domain: "localhost",
        adminToken: "start-failure-admin-token",
        logDestination: false,
      });
      await expect(starting).rejects.toMatchObject({ code: expect.stringMatching(/^E(EXIST|NOTDIR)$/) });
      // The stamps' check, the isolate pool's sweeps and the store's listener checks all stopped.
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    await until(async () => (await otherConnections(client)) === 0);
    await client.end();
    await rm(data, { recursive: true, force: true });
  });
});
