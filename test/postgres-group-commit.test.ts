/**
 * Group commit on PostgreSQL (a private server, as test/postgres.test.ts starts one): the shared
 * suite, and two hosts writing one deployment at once. A host keeps the deployment's lock for
 * several groups in a row; the other still gets it between, and reads every write before its own.
 * A group reads ahead what its members name (their sessions, the ids in their arguments), and
 * moves the counts in its commit statement: it reads none of them first.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { NOT_READY } from "../host/db/fast-path.js";
import { type DatabaseQuota, HostDatabase, PostgresKv, type TenantDatabase } from "../host/db/index.js";
import { countKeyOf, rowKeyUnder } from "../host/db/keys.js";
import type { CompiledTable } from "../host/db/stored-schema.js";
import type { QuerySpec } from "../sdk/protocol/index.js";
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

/**
 * The statements of data sent: not the write lock's taking, nor a bare COMMIT or ROLLBACK (a
 * commit's fence takes locks too, but shared: `pg_advisory_xact_lock_shared`).
 */
function ofData(queries: SentQuery[]): SentQuery[] {
  return queries.filter(
    (query) =>
      !query.text.includes("pg_advisory_xact_lock(") && !/^(COMMIT|ROLLBACK)$/.test(query.text.trim()),
  );
}

/** The commits that began the next group's snapshot, with its reads, in their message. */
function continuing(commits: SentQuery[]): SentQuery[] {
  return commits.filter((query) => query.text.includes("BEGIN ISOLATION LEVEL REPEATABLE READ"));
}

/** Migrates `deployment` to {@link LISTS} and inserts `n` lists; answers their ids. */
async function listsIn(deployment: TenantDatabase, n: number): Promise<string[]> {
  await deployment.migrate(LISTS);
  const { value } = await deployment.mutate((tx) =>
    Promise.all(Array.from({ length: n }, (_, i) => tx.insert("lists", { name: `list ${i}` }))),
  );
  return value;
}

/**
 * Queues `count` inserts, the i-th into list i % lists.length, behind a mutation that holds the
 * write lock until they all wait (so they run as groups after it); answers the statements sent.
 */
async function insertsQueued(
  deployment: TenantDatabase,
  lists: string[],
  count: number,
): Promise<SentQuery[]> {
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
    const inserts = Array.from({ length: count }, (_, i) => {
      const list = lists[i % lists.length] as string;
      return deployment.mutate((tx) => tx.insert("items", { list }), { argsJson: JSON.stringify({ list }) });
    });
    release();
    await blocker;
    await Promise.all(inserts);
  } finally {
    stop();
  }
  return queries;
}

/** Each list's count of items, then the table's. */
async function countsOf(deployment: TenantDatabase, lists: string[]): Promise<number[]> {
  const { value } = await deployment.query(async (tx) => {
    const counts: number[] = [];
    const count = async (index: string, range: QuerySpec["range"]) => {
      const outcome = await tx.query({ table: "items", index, range, order: "asc" }, { kind: "count" });
      counts.push(outcome.kind === "count" ? outcome.count : -1);
    };
    for (const list of lists) await count("by_list", [{ op: "eq", field: "list", value: list }]);
    await count("by_creation", []);
    return counts;
  });
  return value;
}

async function open(name = freshTable(), quota?: Partial<DatabaseQuota>) {
  const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table: name }), quota);
  return { db, dispose: () => db.close() };
}

describe.skipIf(!postgresInstalled)("PostgreSQL group commit", () => {
  groupCommitSuite("PostgreSQL", (quota) => open(freshTable(), quota));

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

  it("answers a mutation whose commit the database does not confirm within its bound 503 unavailable, saying it may have been written; the commit lands once the database goes on", async () => {
    const name = freshTable();
    const { db, dispose } = await open(name, { mutationWaitMs: 500 });
    const blocker = new pg.Client({ connectionString: server.url });
    await blocker.connect();
    try {
      const deployment = await db.deployment("unconfirmed");
      const counter = await withCounter(deployment);
      // Another session's lock lets reads by and holds every write to the table (the deployment's
      // write lock is a row of another table): the commit waits in the database.
      await blocker.query(`BEGIN; LOCK TABLE ${name} IN SHARE ROW EXCLUSIVE MODE`);
      const error = await increment(deployment, counter).then(
        () => undefined,
        (reason: unknown) => reason as Error,
      );
      expect(error).toMatchObject({ code: "unavailable", status: 503, retryAfterSeconds: 1 });
      expect(error?.message).toContain("may or may not have been written");
      // Once the lock goes, the commit lands: the next mutation reads its write.
      await blocker.query("COMMIT");
      expect(await increment(deployment, counter)).toBe(1);
      expect(await counted(deployment, counter)).toEqual({ n: 2, items: 2 });
    } finally {
      await blocker.end();
      await dispose();
    }
  });

  it("reads the lists a group's inserts name ahead, and moves their counts in its commit", async () => {
    const { db, dispose } = await open();
    try {
      const deployment = await db.deployment("lists");
      const lists = await listsIn(deployment, 8);
      const queries = await insertsQueued(deployment, lists, 8);
      // Per group: the lists its members name, read ahead with its BEGIN (no member waits for its
      // own), then the commit, which moves the counts (each list's and the table's size) where
      // they are stored. A slow machine may split the group: the next group then begins with the
      // commit before it (see below).
      const commits = queries.filter(isCommit);
      expect(commits.length).toBeGreaterThan(0);
      expect(queries.filter(readsCount)).toEqual([]);
      for (const commit of commits) expect(commit.text).toContain("moved AS");
      expect(ofData(queries).length).toBe(2 * commits.length - continuing(commits).length);
      expect(await countsOf(deployment, lists)).toEqual([...lists.map(() => 1), 8]);
    } finally {
      await dispose();
    }
  });

  it("begins each next group under the lock with the commit before it: one message a group", async () => {
    const { db, dispose } = await open();
    try {
      const deployment = await db.deployment("waves");
      const lists = await listsIn(deployment, 8);
      const queries = await insertsQueued(deployment, lists, 150);
      const commits = queries.filter(isCommit);
      // 150 inserts make 3 groups at least (64 at most each), up to 4 under one taking of the lock.
      expect(commits.length).toBeGreaterThanOrEqual(3);
      expect(continuing(commits).length).toBeGreaterThan(0);
      // A group begun by the commit before it sends nothing else: its members found their lists
      // in what that message read. Each of the others sends its read ahead first.
      expect(ofData(queries).length).toBe(2 * commits.length - continuing(commits).length);
      expect(queries.filter(readsCount)).toEqual([]);
      expect(await countsOf(deployment, lists)).toEqual([
        ...lists.map((_, i) => Array.from({ length: 150 }, (_, n) => n % 8).filter((n) => n === i).length),
        150,
      ]);
    } finally {
      await dispose();
    }
  });

  it("keeps a commit that landed when the snapshot that continues it cannot read: none, and no error", async () => {
    // A role that may delete rows but not read their values: its writes land, its reads fail.
    const table = freshTable();
    const owner = await PostgresKv.open(server.url, { table });
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const role = `${table}_writer`;
    await admin.query(
      `CREATE ROLE ${role} LOGIN; GRANT CREATE, USAGE ON SCHEMA public TO ${role}; GRANT ALL ON ALL TABLES IN SCHEMA public TO ${role}`,
    );
    const writer = await PostgresKv.open(server.url.replace("platform@", `${role}@`), { table });
    const key = (name: string) => Buffer.from(name);
    try {
      await owner.batch(["a", "b", "c"].map((name) => ({ type: "put", key: key(name), value: name })));
      const begun = await writer.lazySnapshot();
      expect(await begun.get(key("a"))).toBe("a");
      await admin.query(`REVOKE SELECT ON ${table} FROM ${role}; GRANT SELECT (key) ON ${table} TO ${role}`);
      // In one message (the snapshot has begun its transaction), then by the store's own way
      // (commit, then a snapshot that reads), which a snapshot that has read nothing takes.
      const unread = await writer.lazySnapshot();
      for (const [snapshot, gone] of [
        [begun, "a"],
        [unread, "b"],
      ] as const) {
        const next = await writer.commitAndContinue(snapshot, [{ type: "del", key: key(gone) }], undefined, [
          key("c"),
        ]);
        expect(next).toBeUndefined();
        await snapshot.close();
      }
      expect(await owner.getMany(["a", "b", "c"].map(key))).toEqual([undefined, undefined, "c"]);
      // The write's own failure still fails the commit.
      const denied = await writer.lazySnapshot();
      await expect(
        writer.commitAndContinue(denied, [{ type: "put", key: key("c"), value: "x" }], undefined, []),
      ).rejects.toThrow(/permission denied/);
      await denied.close();
      expect(await owner.get(key("c"))).toBe("c");
    } finally {
      await writer.close();
      await owner.close();
      await admin.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
      await admin.end();
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
