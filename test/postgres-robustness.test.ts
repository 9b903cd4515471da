/**
 * The PostgreSQL backend when a tenant or the server misbehaves (a private server, as
 * test/postgres.test.ts starts one): connections the server ends, under a reader, a write lock or
 * the listener; readers made long before they read; a handler's scans started at once; commits
 * whose write cannot be made. One tenant's doing never takes the host down or holds up another's.
 */
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { HostDatabase, PostgresKv } from "../host/db/index.js";
import { type KvSnapshot, RESYNC_MESSAGE } from "../host/db/kv/kv.js";
import { advisoryKey } from "../host/db/kv/postgres-locks.js";
import { freshTable, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";
import { concurrentScansStayInBudget } from "./helpers/scan-turns.js";

const server = postgresForThisFile("PostgreSQL robustness tests");

/**
 * A TCP proxy in front of `target`'s server whose `silenceListeners()` makes the connections that
 * sent LISTEN so far drop everything both ways without closing, as a NAT that forgot them does.
 */
async function silencingProxy(
  target: URL,
): Promise<{ port: number; silenceListeners(): void; close(): void }> {
  const pairs: Array<{ client: Socket; upstream: Socket; listens: boolean; silent: boolean }> = [];
  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const pair = { client, upstream, listens: false, silent: false };
    pairs.push(pair);
    client.on("data", (data: Buffer) => {
      if (data.includes("LISTEN ")) pair.listens = true;
      if (!pair.silent) upstream.write(data);
    });
    upstream.on("data", (data: Buffer) => {
      if (!pair.silent) client.write(data);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    port: (proxy.address() as AddressInfo).port,
    silenceListeners: () => {
      for (const pair of pairs) if (pair.listens) pair.silent = true;
    },
    close: () => {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      proxy.close();
    },
  };
}

/**
 * A store on a fresh table; its snapshot pool's figures; `reading(owner)`, a query's snapshot of
 * `owner`'s that has read (so holds a connection), like a handler still running; and
 * `writing(owner)`, the same for a mutation's snapshot.
 */
async function snapshotPool() {
  const store = await PostgresKv.open(server.url, { table: freshTable() });
  const snapshots = () =>
    store.poolUse().find((use) => use.pool === "snapshots") as { max: number; idle: number; waiting: number };
  const key = Buffer.from("k");
  // Readers made before a snapshot's first read share it: each reader is made once the one before
  // has begun its read (a macrotask after asking), so each holds a connection of its own.
  let turns: Promise<unknown> = Promise.resolve();
  const reading = (owner: string) => {
    const begun = turns.then(async () => {
      const snapshot = await store.readSnapshot(owner);
      const read = snapshot.get(key);
      await new Promise((resolve) => setImmediate(resolve));
      return { snapshot, read };
    });
    turns = begun.catch(() => {});
    return begun.then(async ({ snapshot, read }) => {
      await read;
      return snapshot;
    });
  };
  const writing = async (owner: string) => {
    const snapshot = await store.lazySnapshot(owner);
    await snapshot.get(key);
    return snapshot;
  };
  return { store, snapshots, reading, writing };
}

describe.skipIf(!postgresInstalled)("PostgreSQL backend under misbehaviour", () => {
  it("closes a snapshot whose commit cannot be written: more such commits than its pool holds", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    const key = Buffer.from("k");
    try {
      for (let i = 0; i < 40; i++) {
        const snapshot = await store.lazySnapshot();
        expect(await snapshot.get(key)).toBeUndefined();
        // An add to what the same batch made not a count: the write is refused before it is sent.
        await expect(
          store.commit(snapshot, [
            { type: "put", key, value: "text" },
            { type: "add", key, delta: 1 },
          ]),
        ).rejects.toThrow(/not a count/);
        await snapshot.close();
      }
      const last = await store.lazySnapshot();
      expect(await last.get(key)).toBeUndefined();
      await last.close();
      expect(store.poolUse().find((use) => use.pool === "snapshots")?.waiting).toBe(0);
    } finally {
      await store.close();
    }
  });

  it("goes on when the server ends a connection a reader holds: that reader fails, the host stays up", async () => {
    const table = freshTable();
    const store = await PostgresKv.open(server.url, { table });
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const key = Buffer.from("k");
    try {
      await store.batch([{ type: "put", key, value: "1" }]);
      const held = await store.readSnapshot();
      expect(await held.get(key)).toBe("1");
      // Idle in its transaction while its handler runs: ended as an administrator (or the
      // server's idle_in_transaction_session_timeout) would. Before, the process crashed.
      const { rows } = await admin.query(
        "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE $1",
        [`%${table}%`],
      );
      expect(rows).toEqual([{ ended: true }]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await expect(held.get(Buffer.from("other"))).rejects.toThrow();
      await held.close();
      for (let i = 0; i < 3; i++) {
        const snapshot = await store.readSnapshot();
        expect(await snapshot.get(key)).toBe("1");
        await snapshot.close();
      }
      // A write lock's connection, likewise (idle in its transaction while the writers run).
      const ran = await store.bus.lockAcrossProcesses("held", async () => {
        const ended = await admin.query(
          "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE $1",
          [`%${advisoryKey(table, "held")}::bigint%`],
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        return ended.rows;
      });
      expect(ran).toEqual([{ ended: true }]);
      expect(await store.bus.lockAcrossProcesses("held", async () => "again")).toBe("again");
    } finally {
      await admin.end();
      await store.close();
    }
  });

  it("runs a handler's scans in turn: 200 started at once fetch no more than the budget allows", async () => {
    const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table: freshTable() }));
    try {
      await concurrentScansStayInBudget(db);
    } finally {
      await db.close();
    }
  });

  it("holds no connection for readers made long before they read (calls waiting for their turn)", async () => {
    const store = await PostgresKv.open(server.url, { table: freshTable() });
    const key = Buffer.from("k");
    try {
      await store.batch([{ type: "put", key, value: "1" }]);
      // One tenant's calls queued behind its busy isolate: each has its snapshot, none has read.
      const waiting = await Promise.all(Array.from({ length: 100 }, () => store.readSnapshot()));
      // Another tenant's readers, one after another, more than the pool holds: before, each joined
      // a waiting call's snapshot and its connection stayed in use until that call ran.
      for (let i = 0; i < 40; i++) {
        const reader = await store.readSnapshot();
        expect(await reader.get(key)).toBe("1");
        await reader.close();
      }
      const snapshots = store.poolUse().find((use) => use.pool === "snapshots");
      expect((snapshots?.total ?? 0) - (snapshots?.idle ?? 0)).toBe(0);
      // Made before this write, read after it: a waiting call still sees it.
      await store.batch([{ type: "put", key, value: "2" }]);
      expect(await (waiting[0] as (typeof waiting)[number]).get(key)).toBe("2");
      await Promise.all(waiting.map((snapshot) => snapshot.close()));
      // A scan stops with its reader: an abandoned handler's scan reads no more on a shared snapshot.
      const scanner = await store.readSnapshot();
      const iterator = scanner.iterate({ gte: Buffer.from("a"), lt: Buffer.from("z") });
      expect(await iterator.next(1)).toHaveLength(1);
      await scanner.close();
      await expect(iterator.next(1)).rejects.toThrow(/closed/);
      await iterator.close();
    } finally {
      await store.close();
    }
  });

  it("listens again when the server ends its listener, then says anything may have changed", async () => {
    const table = freshTable();
    const sender = await PostgresKv.open(server.url, { table });
    const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table }));
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const until = async (condition: () => boolean) => {
      for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(condition()).toBe(true);
    };
    try {
      const heard: string[] = [];
      db.store.bus.onBroadcast((message) => heard.push(message));
      const deployment = await db.deployment("app");
      const commits: Array<Buffer[] | undefined> = [];
      deployment.onCommit((writeSet) => commits.push(writeSet));
      await sender.bus.broadcast("before");
      await until(() => heard.includes("before"));
      // Lost (a restart, an administrator): before, this host heard no other host again.
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'");
      await until(() => heard.includes(RESYNC_MESSAGE));
      await until(() => commits.includes(undefined));
      await sender.bus.broadcast("after");
      await until(() => heard.includes("after"));
    } finally {
      await admin.end();
      await db.close();
      await sender.close();
    }
  });

  it("ignores broadcasts that are not host messages (a payload of null ended every host) and resyncs from the wire", async () => {
    // Anyone who may connect to the database can NOTIFY (or a host of another version): before, a
    // payload of `null` threw in the handler and in its error report, unhandled, on every host.
    const table = freshTable();
    const sender = await PostgresKv.open(server.url, { table });
    const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table }));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const heard: unknown[] = [];
      db.onAnnouncement((message) => heard.push(message));
      for (const junk of ["null", "[]", "7", '"deployment"', '{"type":"deployment"}', '{"type":"commit"}'])
        await sender.bus.broadcast(junk);
      // Only the bus says "resync" (its listener was lost): from the wire, it made every host read
      // every schema again and re-run every subscription.
      await sender.bus.broadcast('{"type":"resync","from":"anyone"}');
      await sender.bus.broadcast('{"type":"commit","deployment":"app","keys":[{"x":1}]}');
      await sender.bus.broadcast(JSON.stringify({ type: "deployment", id: "app" }));
      await vi.waitFor(() => expect(heard).toEqual([{ type: "deployment", id: "app" }]), { timeout: 10_000 });
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      await db.close();
      await sender.close();
    }
  });

  it("listens again when its listener's connection goes silent without a word (a NAT dropped it)", async () => {
    const table = freshTable();
    const proxy = await silencingProxy(new URL(server.url));
    const sender = await PostgresKv.open(server.url, { table });
    const url = new URL(server.url);
    url.port = String(proxy.port);
    const deaf = await PostgresKv.open(url.toString(), { table, listenerCheckMs: 200 });
    const until = async (condition: () => boolean) => {
      for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(condition()).toBe(true);
    };
    try {
      const heard: string[] = [];
      deaf.bus.onBroadcast((message) => heard.push(message));
      await sender.bus.broadcast("before");
      await until(() => heard.includes("before"));
      // Neither closed nor answered: TCP alone would notice after many minutes.
      proxy.silenceListeners();
      await sender.bus.broadcast("unheard");
      await until(() => heard.includes(RESYNC_MESSAGE));
      await sender.bus.broadcast("after");
      await until(() => heard.includes("after"));
      expect(heard).not.toContain("unheard");
    } finally {
      await deaf.close();
      await sender.close();
      proxy.close();
    }
  });

  it("shares snapshot connections between tenants: one holding many leaves others room, the waiter holding fewest goes first", async () => {
    const { store, snapshots, reading } = await snapshotPool();
    const { max } = snapshots();
    const share = Math.ceil(max / 4);
    const spare = Math.ceil(max / 16);
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    /** Whether `promise` has settled (after the turns it needs to). */
    const served = async (promise: Promise<unknown>) => {
      let settled = false;
      void promise.then(() => {
        settled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      return settled;
    };
    try {
      // Tenant a starts more handlers than the pool holds: it gets three quarters, the rest wait.
      const ofA = Array.from({ length: max + 4 }, () => reading("a"));
      const begunA: KvSnapshot[] = [];
      for (const each of ofA) void each.then((snapshot) => begunA.push(snapshot));
      await until(() => begunA.length === max - share && snapshots().waiting === share + 4);
      // Before, every other tenant waited behind a's handlers for as long as they ran.
      const ofB = [await reading("b")];
      // b, holding some, takes more only while more than `spare` are free...
      for (let i = 0; i < share - spare - 1; i++) ofB.push(await reading("b"));
      const waitingB = reading("b");
      // ...which stay for tenants holding none.
      const others = [];
      for (let i = 0; i < spare; i++) others.push(await reading(`other-${i}`));
      const late = reading("late");
      await until(() => snapshots().waiting === share + 6);
      // A connection a gives back goes to the tenant holding none, though a's and b's came first.
      await (begunA.pop() as KvSnapshot).close();
      others.push(await late);
      expect(await served(waitingB)).toBe(false);
      expect(snapshots().waiting).toBe(share + 5);
      // Everything given back: every waiter gets its connection.
      for (const snapshot of [...ofB, ...others, ...begunA.splice(0)]) await snapshot.close();
      ofB.push(await waitingB);
      for (const snapshot of [...ofB, ...(await Promise.all(ofA))]) await snapshot.close();
      expect(snapshots().waiting).toBe(0);
    } finally {
      await store.close();
    }
  });

  it("never asks the pool for more than it has: a burst of snapshots in one tick waits in turn, not behind later ones", async () => {
    const { store, snapshots, writing } = await snapshotPool();
    const { max } = snapshots();
    try {
      // Every connection opened, and idle in the pool: parked ones, still in their transactions,
      // are ended and given back to it within moments.
      const warm = await Promise.all(Array.from({ length: max }, (_, i) => writing(`warm-${i}`)));
      for (const snapshot of warm) await snapshot.close();
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      const inTransaction = async () =>
        Number(
          (
            await admin.query(
              "SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'idle in transaction'",
            )
          ).rows[0].n,
        );
      while ((await inTransaction()) > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      await admin.end();
      // Two more snapshots than connections, in one tick; then one more, later.
      const burst = Array.from({ length: max + 2 }, (_, i) => writing(`burst-${i}`));
      const held: KvSnapshot[] = [];
      for (const each of burst) void each.then((snapshot) => held.push(snapshot));
      while (held.length < max) await new Promise((resolve) => setTimeout(resolve, 10));
      // Before, the two extra ones waited in the pool's own queue, unseen, behind every later one.
      expect(snapshots().waiting).toBe(2);
      const later = writing("later");
      while (snapshots().waiting < 3) await new Promise((resolve) => setTimeout(resolve, 10));
      await (held.shift() as KvSnapshot).close();
      await (held.shift() as KvSnapshot).close();
      const extra = await Promise.all(burst.slice(max));
      expect(snapshots().waiting).toBe(1);
      for (const snapshot of [...extra, ...held.splice(0)]) await snapshot.close();
      await (await later).close();
      expect(snapshots().waiting).toBe(0);
    } finally {
      await store.close();
    }
  });
});
