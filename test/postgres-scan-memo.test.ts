/**
 * Scans kept by the PostgreSQL view they were read through (host/db/kv/postgres-scan-memos.ts),
 * against a real server on loopback and two stores on one table (two hosts): a reader is answered
 * at once only when its view is the same; a write through the other host, or by anyone else on the
 * server, names the next view anew, so no reader made after an acknowledged write reads past it;
 * one owner's kept scans never answer another; and readers whose reads are not kept stop beginning
 * early. Then over HTTP, through two in-process hosts and real isolates.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOT_READY } from "../host/db/index.js";
import { collect, type KvIterateOptions, type KvSnapshot, type KvStore } from "../host/db/kv/kv.js";
import { PostgresKv } from "../host/db/kv/postgres-kv.js";
import { sourceCode, startTestHost, type TestHost } from "./helpers/host.js";
import { freshTable, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL scan memo tests");

const text = (value: string) => Buffer.from(value);
const RANGE: KvIterateOptions = { gte: text("list/"), lt: text("list0") };
const values = (entries: ReadonlyArray<readonly [Buffer, string]>) => entries.map(([, value]) => value);

/**
 * One reader of `owner` on `store` that scans {@link RANGE}: from kept scans when its snapshot,
 * begun as its handler would run (`prepare`), has them, else from the server. Says which.
 */
async function readOnce(store: KvStore, owner = "dev"): Promise<{ atOnce: boolean; values: string[] }> {
  const reader = await store.readSnapshot(owner);
  try {
    await reader.prepare?.();
    const kept = reader.tryScanSync?.(RANGE, Number.POSITIVE_INFINITY) ?? NOT_READY;
    if (kept !== NOT_READY) return { atOnce: true, values: values(kept.entries) };
    return { atOnce: false, values: values(await collect(reader.iterate(RANGE))) };
  } finally {
    await reader.close();
  }
}

/** A reader of "dev" whose snapshot is not begun as its handler runs: kept scans do not answer it; `then` reads on. */
async function expectBegunLate(store: KvStore, then?: (reader: KvSnapshot) => Promise<void>): Promise<void> {
  const late = await store.readSnapshot("dev");
  try {
    await late.prepare?.();
    expect(late.tryScanSync?.(RANGE, 1)).toBe(NOT_READY);
    await then?.(late);
  } finally {
    await late.close();
  }
}

/** Reads until a reader is answered at once (at most `readers`); how many it took. */
async function warm(store: KvStore, readers = 48, owner = "dev"): Promise<number> {
  for (let i = 1; i <= readers; i++) if ((await readOnce(store, owner)).atOnce) return i;
  return Number.POSITIVE_INFINITY;
}

describe.skipIf(!postgresInstalled)("scans kept by PostgreSQL view", () => {
  let table: string;
  let hostA: PostgresKv;
  let hostB: PostgresKv;

  beforeAll(async () => {
    table = freshTable();
    hostA = await PostgresKv.open(server.url, { table });
    hostB = await PostgresKv.open(server.url, { table });
    await hostA.batch([
      { type: "put", key: text("list/1"), value: "one" },
      { type: "put", key: text("list/2"), value: "two" },
    ]);
  });
  afterAll(async () => {
    await hostA?.close();
    await hostB?.close();
  });

  it("answers a reader at once once readers have read the same view, and never past a write of the other host", async () => {
    const first = await readOnce(hostA);
    expect(first).toEqual({ atOnce: false, values: ["one", "two"] });
    // Each later reader finds the first's scan kept for its view; once enough have, they begin early.
    expect(await warm(hostA)).toBeLessThanOrEqual(48);
    expect(await readOnce(hostA)).toEqual({ atOnce: true, values: ["one", "two"] });
    for (let n = 3; n <= 6; n++) {
      await hostB.batch([{ type: "put", key: text(`list/${n}`), value: `v${n}` }]);
      // Written and acknowledged: the next reader on host A has a new view, and reads the row.
      const after = await readOnce(hostA);
      expect(after.atOnce).toBe(false);
      expect(after.values.at(-1)).toBe(`v${n}`);
      expect(await warm(hostA)).toBeLessThanOrEqual(48);
    }
  });

  it("takes any write on the server, in another table or by another program, as a new view", async () => {
    expect(await warm(hostA)).toBeLessThanOrEqual(48);
    const other = new pg.Client({ connectionString: server.url });
    await other.connect();
    try {
      await other.query("CREATE TABLE IF NOT EXISTS elsewhere (n int)");
      await other.query("INSERT INTO elsewhere VALUES (1)");
      expect((await readOnce(hostA)).atOnce).toBe(false);
      expect(await warm(hostA)).toBeLessThanOrEqual(48);
      // A write to this very table behind the platform's back is seen, too.
      await other.query(`INSERT INTO ${table} (key, value) VALUES ($1, 'outside')`, [text("list/7")]);
      const after = await readOnce(hostA);
      expect(after).toEqual({ atOnce: false, values: ["one", "two", "v3", "v4", "v5", "v6", "outside"] });
    } finally {
      await other.end();
    }
  });

  it("never answers one owner from another's kept scans of the same view", async () => {
    expect(await warm(hostA)).toBeLessThanOrEqual(48);
    const stranger = await hostA.readSnapshot("stranger");
    await stranger.prepare?.();
    try {
      // Its first read names its view: the same one whose scans the owner "dev" kept.
      expect(await stranger.get(text("list/1"))).toBe("one");
      expect(stranger.tryScanSync?.(RANGE, 1)).toBe(NOT_READY);
      const dev = await hostA.readSnapshot("dev");
      // Before its turn, a reader holds nothing and knows nothing; as its handler runs, it reads at once.
      expect(dev.tryScanSync?.(RANGE, 1)).toBe(NOT_READY);
      await dev.prepare?.();
      expect(dev.tryScanSync?.(RANGE, 1)).not.toBe(NOT_READY);
      await dev.close();
    } finally {
      await stranger.close();
    }
  });

  it("stops beginning early for an owner whose readers' reads are not kept", async () => {
    expect(await warm(hostA)).toBeLessThanOrEqual(48);
    // Rows nobody read before: each one is a read no kept scan or point read could answer.
    for (let i = 0; i < 12; i++) {
      const reader = await hostA.readSnapshot("dev");
      expect(await reader.get(text(`absent/${i}`))).toBeUndefined();
      await reader.close();
    }
    // The scan is still kept for the view, but a reader is no longer begun before it is handed over.
    await expectBegunLate(hostA, async (late) => {
      expect(values(await collect(late.iterate(RANGE)))).toHaveLength(7);
    });
  });

  it("stops beginning early for an owner whose readers begun early read nothing", async () => {
    expect(await warm(hostA)).toBeLessThanOrEqual(48);
    for (let i = 0; i < 12; i++) {
      const idle = await hostA.readSnapshot("dev");
      await idle.prepare?.();
      await idle.close();
    }
    await expectBegunLate(hostA);
  });

  it("answers a point read at once for the same view only: a row the other host changed is read anew", async () => {
    const key = text("list/1");
    /** A reader's point read, at once when its snapshot (begun early) kept it for the view. */
    const pointOnce = async () => {
      const reader = await hostA.readSnapshot("points");
      try {
        await reader.prepare?.();
        const known = reader.tryGetSync(key);
        if (known !== NOT_READY) return { atOnce: true, value: known };
        return { atOnce: false, value: await reader.get(key) };
      } finally {
        await reader.close();
      }
    };
    for (const value of ["first", "second", "third"]) {
      await hostB.batch([{ type: "put", key, value }]);
      const after = await pointOnce();
      expect(after).toEqual({ atOnce: false, value });
      let atOnce = false;
      for (let i = 0; i < 48 && !atOnce; i++) {
        const read = await pointOnce();
        expect(read.value).toBe(value);
        atOnce = read.atOnce;
      }
      expect(atOnce).toBe(true);
    }
    await hostB.batch([{ type: "del", key }]);
    expect(await pointOnce()).toEqual({ atOnce: false, value: undefined });
  });
});

const CAPSULE = `import { capsule, table, string, number } from "platform/server";
export default capsule({
  schema: { items: table({ list: string(), n: number() }).index("by_list", ["list"]) },
  queries: {
    latest: async (ctx, args) =>
      (await ctx.db.items.withIndex("by_list", (q) => q.eq("list", args.list)).order("desc").take(3)).map((i) => i.n),
  },
  mutations: {
    add: async (ctx, args) => ctx.db.items.insert({ list: args.list, n: args.n }),
  },
});
`;

describe.skipIf(!postgresInstalled)("scans kept by PostgreSQL view, over HTTP on two hosts", () => {
  let a: TestHost;
  let b: TestHost;

  beforeAll(async () => {
    a = await startTestHost({ database: server.url, requestQuota: false });
    b = await startTestHost({ database: server.url, requestQuota: false });
    const deployed = await a.deployCode("memo-hosts", await sourceCode(CAPSULE));
    expect(deployed.status, deployed.text()).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await a?.dispose();
    await b?.dispose();
  });

  const latest = async (host: TestHost) => {
    const response = await host.call("memo-hosts", "query", "latest", { list: "a" });
    expect(response.status, response.text()).toBe(200);
    return response.json<{ value: number[] }>().value[0] ?? 0;
  };

  it("no read on host A that starts after host B acknowledged a write misses it", async () => {
    for (let n = 1; n <= 6; n++) {
      // Host A's readers keep and share the scans of the view before the write ...
      for (let i = 0; i < 8; i++) expect(await latest(a)).toBe(n - 1);
      // ... readers race the write ...
      const racing = Array.from({ length: 8 }, () => latest(a));
      const added = await b.call("memo-hosts", "mutation", "add", { list: "a", n });
      expect(added.status, added.text()).toBe(200);
      for (const seen of await Promise.all(racing)) expect([n - 1, n]).toContain(seen);
      // ... and every reader after it sees it, alone or many at once.
      expect(await latest(a)).toBe(n);
      for (const seen of await Promise.all(Array.from({ length: 8 }, () => latest(a)))) expect(seen).toBe(n);
    }
  }, 60_000);
});
