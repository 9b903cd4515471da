/**
 * The PostgreSQL backend against a real PostgreSQL server on loopback (Debian's package, started
 * privately by scripts/local-postgres.ts): the KV conformance suite, broadcasts and locks between
 * two connections as two hosts would hold them, and a whole host running on it.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import { AuthService } from "../host/auth/index.js";
import { HostDatabase, PostgresKv } from "../host/db/index.js";
import { kvConformance } from "../host/db/kv/conformance.js";
import { addConformance } from "../host/db/kv/conformance-adds.js";
import { lazySnapshotConformance } from "../host/db/kv/conformance-lazy.js";
import { scanConformance } from "../host/db/kv/conformance-scans.js";
import { snapshotConformance } from "../host/db/kv/conformance-snapshots.js";
import { collect, type KvIterator } from "../host/db/kv/kv.js";
import { ConnectionParking } from "../host/db/kv/postgres-parking.js";
import { until } from "./helpers/arrivals.js";
import { storedCountSuite } from "./helpers/count-suite.js";
import { deployOwnedWithSession, startTestHost } from "./helpers/host.js";
import { freshTable, postgresForThisFile, postgresInstalled, recordQueries } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL tests");

describe.skipIf(!postgresInstalled)("PostgreSQL backend", () => {
  kvConformance("PostgreSQL store", () => PostgresKv.open(server.url, { table: freshTable() }), {
    describe,
    it,
    expect,
  });
  snapshotConformance("PostgreSQL store", () => PostgresKv.open(server.url, { table: freshTable() }), {
    describe,
    it,
    expect,
  });
  lazySnapshotConformance("PostgreSQL store", () => PostgresKv.open(server.url, { table: freshTable() }), {
    describe,
    it,
    expect,
  });
  scanConformance("PostgreSQL store", () => PostgresKv.open(server.url, { table: freshTable() }), {
    describe,
    it,
    expect,
  });
  addConformance("PostgreSQL store", () => PostgresKv.open(server.url, { table: freshTable() }), {
    describe,
    it,
    expect,
  });
  storedCountSuite(
    "PostgreSQL database",
    async () => {
      const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table: freshTable() }));
      return { db, dispose: () => db.close() };
    },
    15,
  );

  it("lets eight hosts open a new database at once: none fails creating its tables", async () => {
    for (let round = 0; round < 4; round++) {
      const name = freshTable();
      const stores = await Promise.all(
        Array.from({ length: 8 }, () => PostgresKv.open(server.url, { table: name })),
      );
      try {
        await stores[0]?.batch([{ type: "put", key: Buffer.from("k"), value: "v" }]);
        expect(await stores[7]?.get(Buffer.from("k"))).toBe("v");
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    }
  });

  it("gives two hosts opening a new database at once one token secret: each accepts the other's tokens", async () => {
    const name = freshTable();
    const [first, second] = await Promise.all([
      PostgresKv.open(server.url, { table: name }).then((store) => HostDatabase.openStore(store)),
      PostgresKv.open(server.url, { table: name }).then((store) => HostDatabase.openStore(store)),
    ]);
    try {
      const incarnationOf = async () => null;
      // Both look for the secret before either has written one.
      const [authA, authB] = await Promise.all([
        AuthService.open(first, incarnationOf),
        AuthService.open(second, incarnationOf),
      ]);
      for (const [issuer, checker] of [
        [authA, authB],
        [authB, authA],
      ] as const) {
        const { token } = await issuer.signInGuest("shared");
        expect((await checker.authenticate("shared", token)).kind).toBe("guest");
      }
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("delivers broadcasts to the other connections, not back to the sender", async () => {
    const name = freshTable();
    const a = await PostgresKv.open(server.url, { table: name });
    const b = await PostgresKv.open(server.url, { table: name });
    try {
      const atA: string[] = [];
      const atB: string[] = [];
      a.bus.onBroadcast((m) => atA.push(m));
      b.bus.onBroadcast((m) => atB.push(m));
      await a.bus.broadcast("hello from a");
      for (let i = 0; i < 100 && atB.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(atB).toEqual(["hello from a"]);
      expect(atA).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("sends a commit's broadcast to the other connections with its write", async () => {
    const name = freshTable();
    const a = await PostgresKv.open(server.url, { table: name });
    const b = await PostgresKv.open(server.url, { table: name });
    try {
      const atB: string[] = [];
      const seen: Array<string | undefined> = [];
      b.bus.onBroadcast((m) => {
        atB.push(m);
        void b.get(Buffer.from("announced")).then((value) => seen.push(value));
      });
      for (const read of [false, true]) {
        const snapshot = await a.lazySnapshot();
        if (read) await snapshot.get(Buffer.from("announced"));
        await a.commit(
          snapshot,
          [{ type: "put", key: Buffer.from("announced"), value: String(read) }],
          `w${read}`,
        );
        await snapshot.close();
        for (let i = 0; i < 100 && seen.length < (read ? 2 : 1); i++)
          await new Promise((r) => setTimeout(r, 20));
      }
      // Heard once each, after the write had landed.
      expect(atB).toEqual(["wfalse", "wtrue"]);
      expect(seen).toEqual(["false", "true"]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("sends a batch's broadcasts in its own statement: after the write, and none when it fails", async () => {
    const name = freshTable();
    const a = await PostgresKv.open(server.url, { table: name });
    const b = await PostgresKv.open(server.url, { table: name });
    try {
      const heard: Array<[string, string | undefined]> = [];
      b.bus.onBroadcast((message) => {
        void b.get(Buffer.from("record")).then((value) => heard.push([message, value]));
      });
      const sent = recordQueries();
      try {
        await a.batch([{ type: "put", key: Buffer.from("record"), value: "one" }], ["m1", "m2"]);
      } finally {
        sent.stop();
      }
      // In the write's own statement: no broadcast of its own that could fail after the write landed.
      const naming = sent.sent.filter((text) => text.includes("m1"));
      expect(naming).toHaveLength(1);
      expect(naming[0]).toMatch(/INSERT INTO .*pg_notify.*m2/s);
      await expect(
        a.batch([{ type: "put", key: Buffer.from("record"), value: "nul \u0000 here" }], ["refused"]),
      ).rejects.toThrow();
      await a.batch([], ["alone"]);
      await until(async () => heard.length === 3);
      expect(heard.sort()).toEqual([
        ["alone", "one"],
        ["m1", "one"],
        ["m2", "one"],
      ]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("writes a batch larger than one statement as chunks of one transaction: all of it, announced once, or none", async () => {
    const name = freshTable();
    const a = await PostgresKv.open(server.url, { table: name });
    const b = await PostgresKv.open(server.url, { table: name });
    try {
      const heard: string[] = [];
      b.bus.onBroadcast((message) => heard.push(message));
      // About 5 MiB of rows of many short fields, as JSON rows are, with quotes and backslashes.
      const row = (i: number) =>
        JSON.stringify({
          ...Object.fromEntries(Array.from({ length: 40 }, (_, f) => [`f${f}`, `it's \\ ${f}`])),
          i,
        });
      const rows = Array.from({ length: 3000 }, (_, i) => ({
        type: "put" as const,
        key: Buffer.from(`big/${String(i).padStart(5, "0")}`),
        value: row(i),
      }));
      await a.batch([{ type: "put", key: Buffer.from("gone"), value: "x" }]);
      const snapshot = await a.lazySnapshot();
      await snapshot.get(Buffer.from("gone"));
      await a.commit(
        snapshot,
        [
          ...rows,
          ...rows,
          { type: "del", key: Buffer.from("gone") },
          { type: "add", key: Buffer.from("count"), delta: 3000 },
        ],
        "big write",
      );
      await snapshot.close();
      expect(await b.get(Buffer.from("big/02999"))).toBe(row(2999));
      expect(await b.get(Buffer.from("big/00000"))).toBe(row(0));
      expect(await b.get(Buffer.from("gone"))).toBeUndefined();
      expect(await b.get(Buffer.from("count"))).toBe("3000");
      await until(async () => heard.length > 0);
      expect(heard).toEqual(["big write"]);
      // A value the server refuses (text cannot hold NUL) in the last chunk: nothing lands.
      const refused = rows.map((op) => Object.assign({}, op, { key: Buffer.from(`other/${op.key}`) }));
      await expect(
        a.batch([...refused, { type: "put", key: Buffer.from("zz-last"), value: "nul \u0000 here" }]),
      ).rejects.toThrow();
      expect(await b.get(Buffer.from("other/big/00000"))).toBeUndefined();
      // And the store goes on writing.
      await a.batch([{ type: "add", key: Buffer.from("count"), delta: 1 }]);
      expect(await b.get(Buffer.from("count"))).toBe("3001");
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("folds a batch of many operations a few thousand per turn of the event loop before sending it", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    const query = pg.Client.prototype.query;
    let turns = 0;
    let turnsAtWrite = -1;
    let done = false;
    const turn = () => {
      turns++;
      if (!done) setImmediate(turn);
    };
    try {
      // A connection ready in the pool: the write waits for no round trip before its statement.
      await store.batch([{ type: "put", key: Buffer.from("warm"), value: "x" }]);
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        if (turnsAtWrite < 0 && typeof args[0] === "string" && args[0].includes("INSERT"))
          turnsAtWrite = turns;
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      // A mutation's shape: rows and index entries, and adds to many counts.
      const operations = Array.from({ length: 12_000 }, (_, i) =>
        i % 3 === 0
          ? { type: "add" as const, key: Buffer.from(`n${(i / 3) % 400}`), delta: 1 }
          : { type: "put" as const, key: Buffer.from(`r${String(i).padStart(6, "0")}`), value: "x" },
      );
      setImmediate(turn);
      await store.batch(operations);
      expect(turnsAtWrite).toBeGreaterThanOrEqual(5);
      expect(await store.get(Buffer.from("n7"))).toBe("10");
      expect(await store.get(Buffer.from("r011999"))).toBe("x");
    } finally {
      done = true;
      pg.Client.prototype.query = query;
      await store.close();
    }
  });

  it("ends a closed snapshot's transaction on the server soon after, reused or not", async () => {
    const name = freshTable();
    const store = await PostgresKv.open(server.url, { table: name });
    const watcher = new pg.Client({ connectionString: server.url });
    await watcher.connect();
    const open = async () =>
      Number(
        (
          await watcher.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND query LIKE $1",
            [`%${name}%`],
          )
        ).rows[0]?.n,
      );
    try {
      await store.batch([{ type: "put", key: Buffer.from("k"), value: "v" }]);
      for (let i = 0; i < 5; i++) {
        const snapshot = await store.lazySnapshot();
        expect(await snapshot.get(Buffer.from("k"))).toBe("v");
        await snapshot.close();
      }
      let left = await open();
      for (let i = 0; i < 100 && left > 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        left = await open();
      }
      expect(left).toBe(0);
    } finally {
      await watcher.end();
      await store.close();
    }
  });

  it("reuses the connection parked longest first, so that under load none waits to be ended on its own", async () => {
    // Taking the most recently parked one kept a few connections busy and left the others parked
    // until the sweep ended each by a round trip of its own: half a ROLLBACK per request.
    const pool = new pg.Pool({ connectionString: server.url, max: 3 });
    const parking = new ConnectionParking(pool, () => {});
    const taken = [
      await parking.take("a", "read"),
      await parking.take("b", "read"),
      await parking.take("c", "read"),
    ];
    try {
      for (const { end } of taken) expect(end).toBe("");
      for (const { client } of taken) parking.park(client);
      const again = [
        await parking.take("a", "read"),
        await parking.take("b", "read"),
        await parking.take("c", "read"),
      ];
      expect(again.map(({ client }) => client)).toEqual(taken.map(({ client }) => client));
      for (const { end } of again) expect(end).toBe("ROLLBACK");
    } finally {
      for (const { client } of taken) client.release(true);
      await pool.end();
    }
  });

  it("sends the first reads of readers made together as one message, and later readers' apart", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    await store.batch(
      Array.from({ length: 10 }, (_, i) => ({
        type: "put" as const,
        key: Buffer.from(`k${i}`),
        value: `v${i}`,
      })),
    );
    const { sent, stop } = recordQueries();
    try {
      // As handlers started in one turn: each makes its snapshot, then reads (points and a scan).
      const readers = await Promise.all(Array.from({ length: 8 }, () => store.readSnapshot()));
      const answers = await Promise.all([
        ...readers.slice(0, 6).map((reader, i) => reader.get(Buffer.from(`k${i}`))),
        collect(readers[6]?.iterate({ gte: Buffer.from("k"), lt: Buffer.from("l"), limit: 2 }) as KvIterator),
        readers[7]?.get(Buffer.from("missing")),
      ]);
      expect(answers.slice(0, 6)).toEqual(["v0", "v1", "v2", "v3", "v4", "v5"]);
      expect((answers[6] as Array<[Buffer, string]>).map(([, value]) => value)).toEqual(["v0", "v1"]);
      expect(answers[7]).toBeUndefined();
      // One message: the transaction's BEGIN, the point reads as one query, and the scan.
      expect(sent).toHaveLength(1);
      expect(sent[0]).toContain("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      expect(sent[0]?.match(/ANY\(/g)).toHaveLength(1);
      // A reader made after that read has begun gets a transaction of its own.
      await store.batch([{ type: "put", key: Buffer.from("k0"), value: "changed" }]);
      const later = await store.readSnapshot();
      expect(await later.get(Buffer.from("k0"))).toBe("changed");
      expect(await readers[0]?.get(Buffer.from("k0"))).toBe("v0");
      expect(sent.filter((text) => text.includes("BEGIN ISOLATION"))).toHaveLength(2);
      for (const reader of [...readers, later]) await reader.close();
    } finally {
      stop();
      await store.close();
    }
  });

  it("refuses a read asked for just before its snapshot closed, and begins no transaction for it", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    try {
      await store.batch([{ type: "put", key: Buffer.from("k"), value: "v" }]);
      for (const reader of [await store.lazySnapshot(), await store.readSnapshot()]) {
        const scan = reader.iterate({ gte: Buffer.from("k"), lt: Buffer.from("l") }).next(10);
        await reader.close();
        await expect(scan).rejects.toThrow(/closed/);
      }
      const snapshots = store.poolUse().find((pool) => pool.pool === "snapshots");
      expect(snapshots && snapshots.total - snapshots.idle).toBe(0);
    } finally {
      await store.close();
    }
  });

  it("shares one snapshot among 16 readers at most", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    await store.batch([{ type: "put", key: Buffer.from("k"), value: "v" }]);
    const { sent, stop } = recordQueries();
    try {
      const readers = await Promise.all(Array.from({ length: 40 }, () => store.readSnapshot()));
      const values = await Promise.all(readers.map((reader) => reader.get(Buffer.from("k"))));
      expect(values.every((value) => value === "v")).toBe(true);
      expect(sent.filter((text) => text.includes("BEGIN ISOLATION"))).toHaveLength(3);
      for (const reader of readers) await reader.close();
    } finally {
      stop();
      await store.close();
    }
  });

  it("serves more snapshots at once than its pool holds, readers and committers mixed", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    try {
      await store.batch([{ type: "put", key: Buffer.from("shared"), value: "0" }]);
      const work = Array.from({ length: 90 }, async (_, i) => {
        const snapshot = await (i % 3 === 0 ? store.snapshot() : store.lazySnapshot());
        try {
          expect(await snapshot.get(Buffer.from("shared"))).toBe("0");
          await new Promise((r) => setTimeout(r, i % 5));
          if (i % 2 === 0)
            await store.commit(snapshot, [{ type: "put", key: Buffer.from(`w${i}`), value: "x" }]);
        } finally {
          await snapshot.close();
        }
      });
      await Promise.all(work);
      const written = await store.getMany(Array.from({ length: 45 }, (_, i) => Buffer.from(`w${i * 2}`)));
      expect(written.every((value) => value === "x")).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("serializes work under one lock name across connections", async () => {
    const name = freshTable();
    const a = await PostgresKv.open(server.url, { table: name });
    const b = await PostgresKv.open(server.url, { table: name });
    try {
      let inside = 0;
      let most = 0;
      const work = async () => {
        inside++;
        most = Math.max(most, inside);
        await new Promise((r) => setTimeout(r, 30));
        inside--;
      };
      await Promise.all([
        a.bus.lockAcrossProcesses("same", work),
        b.bus.lockAcrossProcesses("same", work),
        a.bus.lockAcrossProcesses("same", work),
        b.bus.lockAcrossProcesses("same", work),
      ]);
      expect(most).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("takes a lock only if no other connection holds it, without waiting, and gives its connection back", async () => {
    const name = freshTable();
    const a = await PostgresKv.open(server.url, { table: name });
    const b = await PostgresKv.open(server.url, { table: name });
    let release = () => {};
    try {
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let held = false;
      const holding = a.bus.lockAcrossProcesses(
        "same",
        async () => {
          held = true;
          await released;
        },
        { outer: true },
      );
      await until(async () => held);
      let ran = 0;
      const work = async () => ++ran;
      // More tries than the outer pool has connections: each gives its own back.
      for (let i = 0; i < 8; i++) {
        expect(await b.bus.lockAcrossProcessesIfFree("same", work, { outer: true })).toEqual({ ran: false });
        expect(await b.bus.lockAcrossProcessesIfFree("same", work, { outer: true, owner: "dev:b" })).toEqual({
          ran: false,
        });
      }
      expect(await b.bus.lockAcrossProcessesIfFree("same", work)).toEqual({ ran: false });
      expect(ran).toBe(0);
      // The owner's turn ended with the failed try: its next outer lock is not held up.
      expect(
        await b.bus.lockAcrossProcesses("other", async () => "free", { outer: true, owner: "dev:b" }),
      ).toBe("free");
      expect(await b.bus.lockAcrossProcessesIfFree("another", work, { outer: true })).toEqual({
        ran: true,
        value: 1,
      });
      release();
      await holding;
      // Its holder's COMMIT is on its way: free once that arrives.
      let taken: unknown;
      await until(async () => {
        taken = await b.bus.lockAcrossProcessesIfFree("same", work, { outer: true, owner: "dev:b" });
        return (taken as { ran: boolean }).ran;
      });
      expect(taken).toEqual({ ran: true, value: 2 });
    } finally {
      release();
      await a.close();
      await b.close();
    }
  });

  it("takes locks without writing anything, and drops the lock rows' table of earlier versions", async () => {
    const name = freshTable();
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const tableOf = async (table: string) =>
      (await admin.query("SELECT to_regclass($1) AS found", [table])).rows[0].found as string | null;
    try {
      await admin.query(`CREATE TABLE ${name}_locks (name text PRIMARY KEY)`);
      await admin.query(`INSERT INTO ${name}_locks VALUES ('deployment:old')`);
      const store = await PostgresKv.open(server.url, { table: name });
      try {
        expect(await tableOf(`${name}_locks`)).toBeNull();
        // A thousand names held one after another: the database holds nothing for any of them.
        for (let i = 0; i < 1000; i += 50)
          await Promise.all(
            Array.from({ length: 50 }, (_, j) =>
              store.bus.lockAcrossProcesses(`deployment:${i + j}`, async () => {}),
            ),
          );
        // Released by commits the callers do not wait for: gone once those are answered.
        const advisoryHeld = async () =>
          (await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'")).rows[0]
            .n;
        await until(async () => (await advisoryHeld()) === 0);
        expect(await tableOf(`${name}_locks`)).toBeNull();
        // Another name is not held up by a held one.
        let release!: () => void;
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        let taken!: () => void;
        const isTaken = new Promise<void>((resolve) => {
          taken = resolve;
        });
        const held = store.bus.lockAcrossProcesses("held", () => {
          taken();
          return released;
        });
        await isTaken;
        expect(await store.bus.lockAcrossProcesses("another", async () => "free")).toBe("free");
        release();
        await held;
      } finally {
        await store.close();
      }
    } finally {
      await admin.end();
    }
  });

  it("refuses to open a database whose encoding is not UTF-8, saying how to make one", async () => {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await admin.query(
        "CREATE DATABASE latin1_db ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0",
      );
      const url = new URL(server.url);
      url.pathname = "/latin1_db";
      await expect(PostgresKv.open(url.toString(), { table: freshTable() })).rejects.toThrow(
        /encoding is LATIN1.*ENCODING 'UTF8'/,
      );
    } finally {
      await admin.query("DROP DATABASE IF EXISTS latin1_db");
      await admin.end();
    }
  });

  it("keeps lock connections for locks taken outside mutation turns, however many turns wait", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    let release = () => {};
    try {
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let holding = 0;
      // Sixteen developers' mutations, two each, every one holding its lock until released: a
      // developer holding none always gets a turn while the turns' connections last.
      const turns = Array.from({ length: 32 }, (_, i) =>
        store.bus.inOwnerTurn(`owner-${i % 16}`, () =>
          store.bus.lockAcrossProcesses(`deployment:${i}`, async () => {
            holding++;
            await released;
          }),
        ),
      );
      await until(async () => holding >= 10);
      // A storage upload's quota lock, outside any turn, while the turns hold all they may.
      expect(await store.bus.lockAcrossProcesses("quota:victim", async () => "taken")).toBe("taken");
      expect(holding).toBe(10);
      release();
      await Promise.all(turns);
      expect(holding).toBe(32);
    } finally {
      release();
      await store.close();
    }
  });

  it("gives each owner one outer lock at a time, so another owner's deploys are not held up by one's long ones", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    let release = () => {};
    try {
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const holding: string[] = [];
      // One developer's three long migrations, each under its own deployment's lifecycle lock.
      const long = ["heavy-1", "heavy-2", "heavy-3"].map((id) =>
        store.bus.lockAcrossProcesses(
          `lifecycle:${id}`,
          async () => {
            holding.push(id);
            await released;
          },
          { outer: true, owner: "dev:heavy" },
        ),
      );
      await until(async () => holding.length >= 1);
      // Another developer's deploy is not kept waiting for them; the heavy one's others wait.
      const other = await store.bus.lockAcrossProcesses("lifecycle:light-1", async () => "deployed", {
        outer: true,
        owner: "dev:light",
      });
      expect(other).toBe("deployed");
      expect(holding).toEqual(["heavy-1"]);
      release();
      await Promise.all(long);
      expect(holding).toEqual(["heavy-1", "heavy-2", "heavy-3"]);
    } finally {
      release();
      await store.close();
    }
  });

  it("keeps a lock held past the server's idle_in_transaction_session_timeout", async () => {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const database = new URL(server.url).pathname.slice(1);
    await admin.query(`ALTER DATABASE "${database}" SET idle_in_transaction_session_timeout = '200ms'`);
    const name = freshTable();
    const a = await PostgresKv.open(server.url, { table: name });
    const b = await PostgresKv.open(server.url, { table: name });
    try {
      const order: string[] = [];
      let entered!: () => void;
      const isIn = new Promise<void>((resolve) => {
        entered = resolve;
      });
      const first = a.bus.lockAcrossProcesses("long", async () => {
        order.push("first in");
        entered();
        // Idle in its transaction for longer than the server allows an ordinary one.
        await new Promise((resolve) => setTimeout(resolve, 700));
        order.push("first out");
      });
      await isIn;
      const second = b.bus.lockAcrossProcesses("long", async () => {
        order.push("second in");
      });
      await Promise.all([first, second]);
      expect(order).toEqual(["first in", "first out", "second in"]);
    } finally {
      await a.close();
      await b.close();
      await admin.query(`ALTER DATABASE "${database}" RESET idle_in_transaction_session_timeout`);
      await admin.end();
    }
  });

  it("serves a burst of queries larger than its connection pool to a deployment whose isolate must start", async () => {
    const host = await startTestHost({ database: server.url, requestQuota: false });
    try {
      expect((await host.deployFixture("burst", "todo")).status).toBe(201);
      expect((await host.call("burst", "mutation", "add", { text: "one" })).status).toBe(200);
      // Each query holds a snapshot (one pooled connection) while it waits for the isolate, which
      // must load the capsule's code from the database first: that read may not need the same pool.
      host.deployments.pool.runner("burst", "").evict();
      // All in one turn, so every query has asked for its snapshot before the first needs the code.
      const burst = Promise.all(
        Array.from({ length: 48 }, () =>
          host.deployments
            .call("burst", { kind: "query", name: "count", argsJson: "{}", identity: null })
            .then((result) => result.valueJson),
        ),
      );
      const stuck = new Promise<string>((resolve) => setTimeout(() => resolve("stuck"), 20_000).unref());
      expect(await Promise.race([burst, stuck])).toEqual(Array.from({ length: 48 }, () => "1"));
    } finally {
      await host.dispose();
    }
  }, 30_000);

  it("runs a whole host on PostgreSQL: deploy, write, read, sign in, restart", async () => {
    const url = server.url;
    let host = await startTestHost({ database: url });
    try {
      expect((await host.deployFixture("todo", "todo")).status).toBe(201);
      for (const text of ["one", "two", "three"])
        expect((await host.call("todo", "mutation", "add", { text })).status).toBe(200);
      const list = (await host.call("todo", "query", "list")).json<{ value: Array<{ text: string }> }>();
      expect(list.value.map((t) => t.text)).toEqual(["three", "two", "one"]);
      expect((await host.call("todo", "query", "count")).json()).toEqual({ value: 3 });
      expect((await host.deployFixture("kitchen", "kitchen-sink")).status).toBe(201);
      expect((await host.admin("/v1/deploys/todo", "GET")).json()).toMatchObject({
        id: "todo",
        apiVersion: 1,
      });
      const guest = (
        await sendRequest(`${host.deploymentUrl("todo")}/__platform/auth/guest`, { method: "POST" })
      ).json<{ token: string }>();
      await host.close();
      host = await startTestHost({ database: url });
      expect((await host.call("todo", "query", "count")).json()).toEqual({ value: 3 });
      // Sessions and the token secret live in PostgreSQL too: the guest's token still works.
      const asGuest = await sendRequest(`${host.deploymentUrl("todo")}/api/query/count`, {
        method: "POST",
        headers: { authorization: `Bearer ${guest.token}` },
      });
      expect(asGuest.json()).toEqual({ value: 3 });
    } finally {
      await host.dispose();
    }
  }, 60_000);

  it("keeps a developer's storage quota exact when two hosts race for the last bytes", async () => {
    const url = server.url;
    const limits = { perDeveloper: 100_000 };
    const a = await startTestHost({ database: url, storageLimits: limits });
    const b = await startTestHost({ database: url, storageLimits: limits });
    try {
      const token = await deployOwnedWithSession(a, "race", "access", "r@example.com", b);
      const put = (host: typeof a) =>
        sendRequest(`${host.deploymentUrl("race")}/storage`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
          body: Buffer.alloc(15_000, 3),
        });
      // 12 uploads of 15,000 bytes, half through each host: exactly 6 fit in 100,000.
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => put(i % 2 === 0 ? a : b)));
      expect(results.filter((r) => r.status === 201)).toHaveLength(6);
      expect(
        results.filter((r) => r.status !== 201).map((r) => r.json<{ error: { code: string } }>().error.code),
      ).toEqual(Array(6).fill("quota_exceeded"));
    } finally {
      await a.dispose();
      await b.dispose();
    }
  }, 60_000);
});
