/**
 * The row storage quota on PostgreSQL (a private server, as test/postgres.test.ts starts one): the
 * shared suite, and two hosts writing one deployment: each reads the other's total with the
 * deployment's lock, so together they never pass the limit and the total stays exact.
 */
import { describe, expect, it } from "vitest";
import { HostDatabase, PostgresKv } from "../host/db/index.js";
import { freshTable, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";
import { expectExact, insertOne, QUOTA_SCHEMA, rowCount, rowQuotaSuite } from "./helpers/row-quota-suite.js";

const server = postgresForThisFile("PostgreSQL row quota tests");

/** A database on a table of its own, whose deployments may store `limit` row bytes each. */
async function open(limit: number, name = freshTable()) {
  const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table: name }), {
    rowBytesPerDeployment: limit,
  });
  return { db, dispose: () => db.close() };
}

describe.skipIf(!postgresInstalled)("PostgreSQL row storage quota", () => {
  rowQuotaSuite("PostgreSQL", open, 10);

  it("holds across two hosts writing one deployment", async () => {
    const name = freshTable();
    const first = await open(5000, name);
    const second = await open(5000, name);
    try {
      const a = await first.db.deployment("shared");
      await a.migrate(QUOTA_SCHEMA);
      const b = await second.db.deployment("shared");
      const text = "h".repeat(120);
      let stored = 0;
      let refused = 0;
      for (let i = 0; i < 24; i++) {
        const host = i % 2 === 0 ? a : b;
        await insertOne(host, text, i % 10).then(
          () => stored++,
          (error: unknown) => {
            expect(error).toMatchObject({ code: "quota_exceeded" });
            refused++;
          },
        );
      }
      expect(stored).toBeGreaterThan(2);
      expect(refused).toBeGreaterThan(0);
      expect(await rowCount(a)).toBe(stored);
      expect(await expectExact(b)).toBeLessThanOrEqual(5000);
      // A delete on one host frees bytes the other host's next insert may take.
      await a.mutate(async (tx) => {
        const first = await tx.query(
          { table: "t", index: "by_creation", range: [], order: "asc" },
          { kind: "first" },
        );
        if (first.kind === "row" && first.row)
          await tx.delete("t", (JSON.parse(first.row) as { id: string }).id);
      });
      await insertOne(b, "fits again");
      expect(await expectExact(a)).toBeLessThanOrEqual(5000);
    } finally {
      await first.dispose();
      await second.dispose();
    }
  });
});
