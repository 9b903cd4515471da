/**
 * On PostgreSQL a mutation's lock re-reads what other hosts may have moved. The schema (a schema
 * of 1000 wide tables takes megabytes) is read only when its tag changed: a few bytes otherwise.
 * Schemas stored without a tag (before tags existed) are read whole, as before.
 */
import { describe, expect, it } from "vitest";
import { HostDatabase, PostgresKv, type TenantDatabase } from "../host/db/index.js";
import { schemaKey, schemaTagKey } from "../host/db/served-schema.js";
import type { SchemaSpec } from "../sdk/values/index.js";
import { freshTable, postgresForThisFile, postgresInstalled, recordQueries } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL schema tag tests");

const NOTES: SchemaSpec = {
  tables: { notes: { fields: { text: { kind: "string", optional: false } }, indexes: {} } },
};
const WITH_TAGS: SchemaSpec = {
  tables: {
    ...NOTES.tables,
    tags: { fields: { name: { kind: "string", optional: false } }, indexes: {} },
  },
};

async function open(name: string) {
  return HostDatabase.openStore(await PostgresKv.open(server.url, { table: name }));
}

/** Which of the schema's keys the statements sent by `work` named. */
async function keysRead(deployment: TenantDatabase, work: () => Promise<unknown>) {
  const { queries, stop } = recordQueries();
  try {
    await work();
  } finally {
    stop();
  }
  // Keys go as parameters, or inline in hex (a lock's reads: postgres-locks.ts).
  const named = (key: Buffer) =>
    queries.some(
      (query) =>
        query.text.includes(key.toString("hex")) ||
        ((query.values ?? []) as unknown[])
          .flat()
          .some((value) => Buffer.isBuffer(value) && value.equals(key)),
    );
  return { schema: named(schemaKey(deployment.id)), tag: named(schemaTagKey(deployment.id)) };
}

/** A host that hears no other host's announcements (as when they are lost). */
function deaf(db: HostDatabase): HostDatabase {
  (db as unknown as { receive: () => Promise<void> }).receive = async () => {};
  return db;
}

/** Runs `work` with two hosts on table `name`, the first deaf to the second's announcements. */
async function twoHosts(name: string, work: (first: HostDatabase, second: HostDatabase) => Promise<void>) {
  const first = deaf(await open(name));
  const second = await open(name);
  try {
    await work(first, second);
  } finally {
    await first.close();
    await second.close();
  }
}

/** Which of the schema's keys one mutation inserting `row` into `table` read. */
const insertReads = (deployment: TenantDatabase, table: string, row: Record<string, string>) =>
  keysRead(deployment, () => deployment.mutate((tx) => tx.insert(table, row)));

const TAG_ONLY = { schema: false, tag: true };
const SCHEMA_TOO = { schema: true, tag: true };

describe.skipIf(!postgresInstalled)("the schema's tag on PostgreSQL", () => {
  it("a mutation reads the tag, not the schema, and sees another host's migration by it", async () => {
    await twoHosts(freshTable(), async (first, second) => {
      const a = await first.deployment("tagged");
      await a.migrate(NOTES);
      await a.mutate((tx) => tx.insert("notes", { text: "one" }));
      expect(await insertReads(a, "notes", { text: "two" })).toEqual(TAG_ONLY);
      // Another host migrates; this one never hears of it, and reads the schema under its lock.
      await (await second.deployment("tagged")).migrate(WITH_TAGS);
      expect(await insertReads(a, "tags", { name: "new table" })).toEqual(SCHEMA_TOO);
      expect(a.schema.hash).toBe((await second.deployment("tagged")).schema.hash);
      expect(await insertReads(a, "tags", { name: "again" })).toEqual(TAG_ONLY);
    });
  });

  it("a schema stored without a tag is read whole, until a migration stores one", async () => {
    const name = freshTable();
    const setup = await open(name);
    await (await setup.deployment("old")).migrate(NOTES);
    await setup.store.batch([{ type: "del", key: schemaTagKey("old") }]);
    await setup.close();
    await twoHosts(name, async (first, second) => {
      const a = await first.deployment("old");
      for (let i = 0; i < 2; i++) expect(await insertReads(a, "notes", { text: `${i}` })).toEqual(SCHEMA_TOO);
      await (await second.deployment("old")).migrate(WITH_TAGS);
      await a.mutate((tx) => tx.insert("tags", { name: "seen" }));
      expect(await insertReads(a, "tags", { name: "again" })).toEqual(TAG_ONLY);
    });
  });

  it("a deployment another host deleted fails this host's next mutation with not_found", async () => {
    await twoHosts(freshTable(), async (first, second) => {
      const a = await first.deployment("gone");
      await a.migrate(NOTES);
      await a.mutate((tx) => tx.insert("notes", { text: "one" }));
      await second.dropDeployment("gone");
      await expect(a.mutate((tx) => tx.insert("notes", { text: "two" }))).rejects.toMatchObject({
        code: "not_found",
      });
    });
  });
});
