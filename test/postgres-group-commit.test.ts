/**
 * Group commit on PostgreSQL (a private server, as test/postgres.test.ts starts one): the shared
 * suite, and two hosts writing one deployment at once. A host keeps the deployment's lock for
 * several groups in a row; the other still gets it between, and reads every write before its own.
 */
import { describe, expect, it } from "vitest";
import { HostDatabase, PostgresKv } from "../host/db/index.js";
import { counted, groupCommitSuite, increment, withCounter } from "./helpers/group-commit-suite.js";
import { freshTable, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL group commit tests");

async function open(name = freshTable()) {
  const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table: name }));
  return { db, dispose: () => db.close() };
}

describe.skipIf(!postgresInstalled)("PostgreSQL group commit", () => {
  groupCommitSuite("PostgreSQL", () => open());

  it("two hosts incrementing one counter at once lose no increment", async () => {
    const name = freshTable();
    const first = await open(name);
    const second = await open(name);
    try {
      const a = await first.db.deployment("shared");
      const counter = await withCounter(a);
      const b = await second.db.deployment("shared");
      const seen = await Promise.all(
        Array.from({ length: 300 }, (_, i) => increment(i % 2 === 0 ? a : b, counter)),
      );
      expect([...seen].sort((x, y) => x - y)).toEqual(Array.from({ length: 300 }, (_, i) => i));
      expect(await counted(b, counter)).toEqual({ n: 300, items: 300 });
      expect(await counted(a, counter)).toEqual({ n: 300, items: 300 });
    } finally {
      await first.dispose();
      await second.dispose();
    }
  }, 60_000);
});
