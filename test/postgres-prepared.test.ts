/**
 * A snapshot's reads on PostgreSQL run by name (host/db/kv/postgres-prepared.ts): each connection
 * prepares a read's statement once, in the first message that carries it, and executes it after;
 * a message that failed leaves the connection's prepared statements unknown, and its next message
 * forgets them and prepares again. Against a real PostgreSQL server on loopback.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { PostgresKv } from "../host/db/index.js";
import { collect, type KvIterator, type KvSnapshot } from "../host/db/kv/kv.js";
import { preparedReads } from "../host/db/kv/postgres-prepared.js";
import { freshTable, postgresForThisFile, postgresInstalled, recordQueries } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL prepared-read tests");

const PREPARE = /PREPARE (platform_read_[0-9a-f]+) AS /g;

describe.skipIf(!postgresInstalled)("reads by name on PostgreSQL", () => {
  it("prepares a read's statement once per connection, then executes it by name with the same answers", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    await store.batch(
      Array.from({ length: 30 }, (_, i) => ({
        type: "put" as const,
        key: Buffer.from(`k${String(i).padStart(2, "0")}`),
        value: `it's "v${i}" \\ $1`,
      })),
    );
    const { queries, stop } = recordQueries();
    try {
      for (let round = 0; round < 12; round++) {
        // A scan both ways, a page after a key, and point reads, each on a snapshot of its own.
        const reader = await store.lazySnapshot();
        const start = round % 10;
        const [down, page, one, many] = await Promise.all([
          collect(
            reader.iterate({
              gte: Buffer.from("k"),
              lt: Buffer.from("l"),
              reverse: true,
              limit: 3,
            }) as KvIterator,
          ),
          collect(
            reader.iterate({
              gte: Buffer.from(`k${String(start).padStart(2, "0")}`),
              lt: Buffer.from("l"),
              limit: 2,
              keys: false,
            }) as KvIterator,
          ),
          reader.get(Buffer.from("k07")),
          Promise.all([reader.get(Buffer.from("k01")), reader.get(Buffer.from("missing"))]),
        ]);
        expect(down.map(([key]) => key.toString())).toEqual(["k29", "k28", "k27"]);
        expect(page.map(([, value]) => value)).toEqual([
          `it's "v${start}" \\ $1`,
          `it's "v${start + 1}" \\ $1`,
        ]);
        expect(one).toBe(`it's "v7" \\ $1`);
        expect(many).toEqual([`it's "v1" \\ $1`, undefined]);
        await reader.close();
      }
      const prepares = new Map<pg.Client, string[]>();
      for (const { text, client } of queries)
        for (const [, name] of text.matchAll(PREPARE))
          prepares.set(client, [...(prepares.get(client) ?? []), name as string]);
      // Each connection prepared each statement once; every read after went by name.
      expect(prepares.size).toBeGreaterThan(0);
      for (const names of prepares.values()) expect(new Set(names).size).toBe(names.length);
      const reads = queries.filter(({ text }) => text.includes("BEGIN ISOLATION"));
      expect(reads).toHaveLength(12);
      for (const { text } of reads)
        for (const statement of text.split("; ").filter((part) => !part.startsWith("PREPARE ")))
          expect(statement).not.toMatch(/FROM kv_/);
      expect(reads.at(-1)?.text).toMatch(/EXECUTE platform_read_/);
    } finally {
      stop();
      await store.close();
    }
  });

  it("forgets what a connection prepared once a message of its failed, and prepares again", async () => {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      const read = { text: "SELECT $1::int + 1 AS n, $2::text AS said", values: [41, "it's $1"] };
      const first = preparedReads(client, [read], true);
      expect(first?.setup).toEqual(["DEALLOCATE ALL", expect.stringMatching(/^PREPARE platform_read_/)]);
      // The PREPARE runs, then the message fails: whether it ran is not known from the failure.
      await expect(client.query([...(first?.setup ?? []), "SELECT 1/0"].join("; "))).rejects.toThrow(
        /division by zero/,
      );
      first?.settle(false);
      // Preparing the same name again as it is would fail: the connection still holds it.
      const name = /PREPARE (\S+)/.exec(first?.setup[1] ?? "")?.[1];
      await expect(client.query(`PREPARE ${name} AS SELECT 1`)).rejects.toMatchObject({ code: "42P05" });
      const again = preparedReads(client, [read], true);
      expect(again?.setup[0]).toBe("DEALLOCATE ALL");
      const answered = (await client.query(
        [...(again?.setup ?? []), ...(again?.reads ?? [])].join("; "),
      )) as unknown as pg.QueryResult[];
      again?.settle(true);
      expect(answered.at(-1)?.rows).toEqual([{ n: 42, said: "it's $1" }]);
      // Known now: the next message executes it alone, with no setup.
      const known = preparedReads(client, [read], true);
      expect(known?.setup).toEqual([]);
      expect(known?.reads).toEqual([`EXECUTE ${name}(41, 'it''s $1')`]);
      expect((await client.query(known?.reads[0] ?? "")).rows).toEqual([{ n: 42, said: "it's $1" }]);
    } finally {
      await client.end();
    }
  });

  it("answers after the server forgot a connection's prepared statements: the read prepares them again", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    await store.batch([{ type: "put", key: Buffer.from("k"), value: "v" }]);
    const { queries, stop } = recordQueries();
    try {
      const first = await store.lazySnapshot();
      expect(await first.get(Buffer.from("k"))).toBe("v");
      await first.close();
      // Something else on the session dropped them, as a pooler's reset would.
      const client = queries.find(({ text }) => text.includes("PREPARE platform_read_"))?.client as pg.Client;
      await client.query("ROLLBACK; DEALLOCATE ALL");
      for (let i = 0; i < 3; i++) {
        const reader = await store.lazySnapshot();
        expect(await reader.get(Buffer.from("k"))).toBe("v");
        await reader.close();
      }
      // The read that found its name gone went once more on the same connection, preparing again.
      const failed = queries.findIndex(
        ({ text, client: by }, i) => i > 0 && by === client && text.includes("EXECUTE platform_read_"),
      );
      expect(queries[failed + 1]?.client).toBe(client);
      expect(queries[failed + 1]?.text).toMatch(
        /^ROLLBACK; BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; DEALLOCATE ALL; PREPARE /,
      );
    } finally {
      stop();
      await store.close();
    }
  });

  it("sends a statement with an empty array, or too large to write as text, as it did before", () => {
    const client = {} as pg.Client;
    const empty = preparedReads(
      client,
      [{ text: "SELECT key FROM t WHERE key = ANY($1::bytea[])", values: [[]] }],
      true,
    );
    expect(empty?.reads).toEqual(["SELECT key FROM t WHERE key = ANY(ARRAY[]::text[]::bytea[])"]);
    expect(empty?.setup).toEqual(["DEALLOCATE ALL"]);
    expect(
      preparedReads(client, [{ text: "SELECT $1::text", values: ["x".repeat(2 * 1024 * 1024)] }], true),
    ).toBeUndefined();
  });

  it("sends reads as text, and resets nothing, in a transaction on a connection whose names are not known", () => {
    const client = {} as pg.Client;
    const read = { text: "SELECT $1::int AS n", values: [7] };
    const inside = preparedReads(client, [read], false);
    expect(inside).toMatchObject({ setup: [], reads: ["SELECT 7::int AS n"] });
    // Still not known: the next message that begins a transaction resets and prepares.
    expect(preparedReads(client, [read], true)?.setup).toEqual([
      "DEALLOCATE ALL",
      expect.stringMatching(/^PREPARE platform_read_\w+ AS SELECT \$1::int AS n$/),
    ]);
    expect(preparedReads(client, [read], false)?.reads).toEqual([
      expect.stringMatching(/^EXECUTE platform_read_\w+\(7\)$/),
    ]);
  });

  // Found by review: a message made while another was on its way prepared the same name again
  // (42P05), or forgot what the other added, failing the other readers of a shared snapshot, or
  // the next snapshot (another owner's) on that connection.
  const range = { gte: Buffer.from("k"), lt: Buffer.from("l") };
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
  const keysOf = (entries: Array<[Buffer, string]>) => entries.map(([key]) => key.toString());
  const threeRows = async (table = freshTable()) => {
    const store = await PostgresKv.open(server.url, { table });
    await store.batch(
      [1, 2, 3].map((i) => ({ type: "put" as const, key: Buffer.from(`k${i}`), value: `v${i}` })),
    );
    return store;
  };
  /** What another owner's first read, a scan, finds on the connection the last snapshot left. */
  const nextOwnerScans = async (store: PostgresKv) => {
    const b = await store.lazySnapshot("b");
    const keys = keysOf(await collect(b.iterate(range)));
    await b.close();
    return keys;
  };

  it("answers the readers of a shared snapshot whose new reads are on their way at once", async () => {
    const store = await threeRows();
    const [a, b, c] = await Promise.all([
      store.readSnapshot("o"),
      store.readSnapshot("o"),
      store.readSnapshot("o"),
    ]);
    try {
      await Promise.all([a?.get(Buffer.from("k1")), b?.get(Buffer.from("k2")), c?.get(Buffer.from("k3"))]);
      const first = collect(b?.iterate(range) as KvIterator);
      await nextTurn();
      const second = collect(c?.iterate(range) as KvIterator);
      expect(keysOf(await first)).toEqual(["k1", "k2", "k3"]);
      expect(keysOf(await second)).toEqual(["k1", "k2", "k3"]);
      expect(await a?.get(Buffer.from("k3"))).toBe("v3");
    } finally {
      await Promise.all([a?.close(), b?.close(), c?.close()]);
      await store.close();
    }
  });

  it("answers the next snapshot on a connection where two new reads were on their way at once", async () => {
    const store = await threeRows();
    try {
      const a = await store.lazySnapshot("a");
      await a.get(Buffer.from("k1"));
      const up = collect(a.iterate(range));
      await nextTurn();
      const down = collect(a.iterate({ ...range, reverse: true }));
      expect([keysOf(await up), keysOf(await down)]).toEqual([
        ["k1", "k2", "k3"],
        ["k3", "k2", "k1"],
      ]);
      await a.close();
      expect(await nextOwnerScans(store)).toEqual(["k1", "k2", "k3"]);
    } finally {
      await store.close();
    }
  });

  it("answers a snapshot that takes a connection closed with a read still on its way", async () => {
    const store = await threeRows();
    try {
      const a = await store.lazySnapshot("a");
      await a.get(Buffer.from("k1"));
      const abandoned = collect(a.iterate(range)).catch(() => []);
      await nextTurn();
      await a.close();
      expect(await nextOwnerScans(store)).toEqual(["k1", "k2", "k3"]);
      await abandoned;
    } finally {
      await store.close();
    }
  });

  // Found by review: a read made after a failed one carried DEALLOCATE ALL, which the aborted
  // transaction refused; the record claimed the reset, and the connection's next snapshot, another
  // owner's, prepared a name the server still held (42P05).
  it("answers the next owner on a connection where a reset was refused in an aborted transaction", async () => {
    const table = freshTable();
    const store = await threeRows(table);
    const admin = new pg.Client({ connectionString: server.url });
    const locker = new pg.Client({ connectionString: server.url });
    await Promise.all([admin.connect(), locker.connect()]);
    try {
      const scan = (snapshot: KvSnapshot, reverse: boolean) =>
        collect(snapshot.iterate({ ...range, reverse })).then((rows) => keysOf(rows));
      // The connection prepares the point read and the reverse scan.
      const warm = await store.snapshot("a");
      await warm.get(Buffer.from("k1"));
      await scan(warm, true);
      await warm.close();
      // Owner a's scan waits on a lock and is cancelled: its transaction is aborted.
      const a = await store.snapshot("a");
      await locker.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      const blocked = scan(a, false).catch((error: { code?: string }) => error.code);
      let pids: number[] = [];
      for (let i = 0; i < 250 && pids.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        pids = (
          await admin.query(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%platform_read_%'",
          )
        ).rows.map((row) => row.pid as number);
      }
      for (const pid of pids) await admin.query("SELECT pg_cancel_backend($1)", [pid]);
      expect(await blocked).toBe("57014");
      await locker.query("ROLLBACK");
      // A read after the failure (refused), and while it is on its way a's snapshot closes and
      // owner b's first read begins on the same connection.
      const after = a.get(Buffer.from("k2")).catch((error: { code?: string }) => error.code);
      for (let i = 0; i < 10; i++) await null;
      await a.close();
      const b = await store.lazySnapshot("b");
      const first = scan(b, true).catch((error: { code?: string }) => error.code);
      expect(await after).toBe("25P02");
      expect(await first).toEqual(["k3", "k2", "k1"]);
      await b.close();
    } finally {
      await Promise.all([admin.end(), locker.end()]);
      await store.close();
    }
  });

  // Found by review (older than reads by name): the commit counted the command tags of reads still
  // on their way as its own, and could call a write that failed landed.
  it("tells a group commit's failed write from a landed one while reads of its snapshot are on their way", async () => {
    const store = await threeRows();
    await store.batch([{ type: "put", key: Buffer.from("cnt"), value: "not a number" }]);
    try {
      const s = await store.lazySnapshot("o");
      await s.get(Buffer.from("k1"));
      const three = () =>
        Promise.all([
          collect(s.iterate(range)),
          collect(s.iterate({ ...range, reverse: true })),
          collect(s.iterate({ ...range, keys: false })),
        ]);
      await three();
      // Three reads in one message, left unawaited as a handler may; their message is sent.
      const dangling = three().then(
        () => "answered",
        () => "failed",
      );
      for (let i = 0; i < 10; i++) await null;
      const failing = [
        { type: "put" as const, key: Buffer.from("k9"), value: "v9" },
        { type: "add" as const, key: Buffer.from("cnt"), delta: 1 },
      ];
      await expect(
        store.commitAndContinue(s, failing, undefined, [Buffer.from("k1")], "o"),
      ).rejects.toThrow();
      expect(await dangling).toBe("answered");
      expect(await store.get(Buffer.from("k9"))).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  // Last: it fills the names every test of this file shares.
  it("names 1,024 statement texts at most: past them a new text goes as text, a named one keeps its name", () => {
    const client = {} as pg.Client;
    const read = (n: number) => ({ text: `SELECT $1::int + ${n} AS n`, values: [1] });
    const kept = preparedReads(client, [read(0)], true)?.reads[0];
    let firstAsText = -1;
    for (let n = 1; n <= 1100 && firstAsText < 0; n++)
      if (!preparedReads(client, [read(n)], true)?.reads[0]?.startsWith("EXECUTE ")) firstAsText = n;
    expect(firstAsText).toBeGreaterThan(0);
    expect(preparedReads(client, [read(firstAsText)], true)?.reads).toEqual([
      `SELECT 1::int + ${firstAsText} AS n`,
    ]);
    expect(preparedReads(client, [read(2000)], true)?.reads).toEqual(["SELECT 1::int + 2000 AS n"]);
    expect(preparedReads(client, [read(0)], true)?.reads).toEqual([kept]);
  });
});
