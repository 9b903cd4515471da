/**
 * Group commit on PostgreSQL (a private server, as test/postgres.test.ts starts one): the shared
 * suite, and two hosts writing one deployment at once. A host keeps the deployment's lock for
 * several groups in a row; the other still gets it between, and reads every write before its own.
 * A group reads ahead what its members name (their sessions, the ids in their arguments), and
 * moves the counts in its commit statement: it reads none of them first.
 */
import { describe, expect, it } from "vitest";
import { NOT_READY } from "../host/db/fast-path.js";
import { HostDatabase, PostgresKv } from "../host/db/index.js";
import { countKeyOf, rowKeyUnder } from "../host/db/keys.js";
import type { CompiledTable } from "../host/db/stored-schema.js";
import type { SchemaSpec } from "../sdk/values/index.js";
import { counted, groupCommitSuite, increment, withCounter } from "./helpers/group-commit-suite.js";
import {
  freshTable,
  postgresForThisFile,
  postgresInstalled,
  recordQueries,
  type SentQuery,
} from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL group commit tests");

/** Lists, and items each in a list (a reference, counted per list by `by_list`). */
const LISTS: SchemaSpec = {
  tables: {
    lists: { fields: { name: { kind: "string", optional: false } }, indexes: {} },
    items: {
      fields: { list: { kind: "id", table: "lists", optional: false } },
      indexes: { by_list: ["list"] },
    },
  },
};

/** Whether `query` is a commit's write statement (postgres-sql.ts). */
function isCommit(query: SentQuery): boolean {
  return query.text.includes("put AS (INSERT");
}

/** Whether `query` reads a stored count (keys.ts: a count key's first byte), as a parameter or inline. */
function readsCount(query: SentQuery): boolean {
  if (isCommit(query)) return false;
  const count = countKeyOf(Buffer.from([0]))[0] as number;
  const hex = count.toString(16).padStart(2, "0");
  const values = (query.values ?? []).flat() as unknown[];
  return (
    query.text.includes(`decode('${hex}`) ||
    values.some((value) => Buffer.isBuffer(value) && value[0] === count)
  );
}

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

  it("reads the lists a group's inserts name ahead, and moves their counts in its commit", async () => {
    const { db, dispose } = await open();
    try {
      const deployment = await db.deployment("lists");
      await deployment.migrate(LISTS);
      const { value: lists } = await deployment.mutate((tx) =>
        Promise.all(Array.from({ length: 8 }, (_, i) => tx.insert("lists", { name: `list ${i}` }))),
      );
      // Holds the write lock until the inserts below have queued: they run as one group after it.
      let release!: () => void;
      let running!: () => void;
      const started = new Promise<void>((resolve) => (running = resolve));
      const blocker = deployment.mutate(() => {
        running();
        return new Promise<void>((resolve) => (release = resolve));
      });
      await started;
      const { queries, stop } = recordQueries();
      try {
        const inserts = lists.map((list) =>
          deployment.mutate((tx) => tx.insert("items", { list }), { argsJson: JSON.stringify({ list }) }),
        );
        release();
        await blocker;
        await Promise.all(inserts);
      } finally {
        stop();
      }
      // Per group: the lists its members name, read ahead with its BEGIN (no member waits for its
      // own), then the commit, which moves the counts (each list's and the table's size) where
      // they are stored. A slow machine may split the group: then as many per group. The write
      // lock's statements aside.
      const commits = queries.filter(isCommit);
      const ofData = queries.filter(
        (query) => !query.text.includes("_locks") && !/^(COMMIT|ROLLBACK)$/.test(query.text.trim()),
      );
      expect(commits.length).toBeGreaterThan(0);
      expect(queries.filter(readsCount)).toEqual([]);
      for (const commit of commits) expect(commit.text).toContain("moved AS");
      expect(ofData.length).toBe(2 * commits.length);
      const { value: counts } = await deployment.query(async (tx) => {
        const out: unknown[] = [];
        for (const list of lists)
          out.push(
            await tx.query(
              {
                table: "items",
                index: "by_list",
                range: [{ op: "eq", field: "list", value: list }],
                order: "asc",
              },
              { kind: "count" },
            ),
          );
        out.push(
          await tx.query(
            { table: "items", index: "by_creation", range: [], order: "asc" },
            { kind: "count" },
          ),
        );
        return out;
      });
      expect(counts).toEqual([
        ...lists.map(() => ({ kind: "count", count: 1 })),
        { kind: "count", count: 8 },
      ]);
    } finally {
      await dispose();
    }
  });

  it("reads the keys a member names ahead: its handler finds them without a round trip", async () => {
    const { db, dispose } = await open();
    try {
      const deployment = await db.deployment("named");
      await deployment.migrate(LISTS);
      const { value: list } = await deployment.mutate((tx) => tx.insert("lists", { name: "one" }));
      const key = rowKeyUnder((deployment.tables.get("lists") as CompiledTable).rowPrefix, list);
      const found = (reads?: Buffer[]) =>
        deployment.mutate((tx) => tx.tryReadKeySync(key), reads ? { reads } : {}).then((r) => r.value);
      expect(await found()).toBe(NOT_READY);
      expect(JSON.parse((await found([key])) as string)).toMatchObject({ id: list, name: "one" });
    } finally {
      await dispose();
    }
  });
});
