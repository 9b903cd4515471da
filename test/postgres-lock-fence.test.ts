/**
 * Writes under a lock whose connection was lost (a private server, as test/postgres.test.ts starts
 * one). The server ends a lock's backend, and so the lock, while its holder works; another host
 * then takes the lock and writes. The first holder's write must not land over it (a lost update):
 * its fence refuses it, and nothing of it is written. A write already on its way when the lock is
 * taken again lands before the new holder reads.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { HostDatabase, PostgresKv, type TenantDatabase } from "../host/db/index.js";
import { collect, LOCK_LOST, type LockFence } from "../host/db/kv/index.js";
import type { SchemaSpec } from "../sdk/values/index.js";
import { endLockBackend, freshTable, postgresForThisFile, postgresInstalled } from "./helpers/postgres.js";
import { expectExact } from "./helpers/row-quota-suite.js";

const server = postgresForThisFile("PostgreSQL lock fence tests");

const COUNTERS: SchemaSpec = {
  tables: { counters: { fields: { n: { kind: "number", optional: false } }, indexes: {} } },
};

/** The counter's row: its id and value. */
async function counter(deployment: TenantDatabase): Promise<{ id: string; n: number }> {
  const { value } = await deployment.query((tx) =>
    tx.query({ table: "counters", index: "by_creation", range: [], order: "asc" }, { kind: "first" }),
  );
  if (value.kind !== "row" || !value.row) throw new Error("No counter row.");
  const row = JSON.parse(value.row) as { id: string; n: number };
  return { id: row.id, n: row.n };
}

/** A mutation adding one to the counter; `meanwhile` runs between its read and its write. */
function increment(deployment: TenantDatabase, meanwhile: () => Promise<void> = async () => {}) {
  return deployment.mutate(async (tx) => {
    const first = await tx.query(
      { table: "counters", index: "by_creation", range: [], order: "asc" },
      { kind: "first" },
    );
    if (first.kind !== "row" || !first.row) throw new Error("No counter row.");
    const row = JSON.parse(first.row) as { id: string; n: number };
    await meanwhile();
    await tx.update("counters", row.id, { n: row.n + 1 });
  });
}

/**
 * Two hosts on one fresh table, with deployment "shared" holding one counter at 0: runs `work`
 * with the deployment as each host has it, and the table.
 */
async function onTwoHosts(work: (a: TenantDatabase, b: TenantDatabase, table: string) => Promise<void>) {
  const table = freshTable();
  const first = await HostDatabase.openStore(await PostgresKv.open(server.url, { table }));
  const second = await HostDatabase.openStore(await PostgresKv.open(server.url, { table }));
  try {
    const a = await first.deployment("shared");
    await a.migrate(COUNTERS);
    await a.mutate((tx) => tx.insert("counters", { n: 0 }));
    await work(a, await second.deployment("shared"), table);
  } finally {
    await first.close();
    await second.close();
  }
}

describe.skipIf(!postgresInstalled)("PostgreSQL writes under a lost lock", () => {
  it("refuses a mutation's commit whose write lock was lost while it ran: another host's increment is not lost", () =>
    onTwoHosts(async (a, b, table) => {
      // A reads 0; its lock's backend is ended; B takes the lock, reads 0 and writes 1; A goes on.
      const stale = increment(a, async () => {
        await endLockBackend(server, table, "deployment:shared");
        await increment(b);
      });
      await expect(stale).rejects.toMatchObject({ code: "unavailable", cause: LOCK_LOST });
      expect((await counter(b)).n).toBe(1);
      // Nothing of A's was written: a retry counts from B's write.
      await increment(a);
      expect((await counter(b)).n).toBe(2);
      expect((await counter(a)).n).toBe(2);
    }));

  it("runs the mutations queued behind a commit refused so under a new taking of the lock; the row bytes stay exact", () =>
    onTwoHosts(async (a, b, table) => {
      let queued: Array<Promise<unknown>> = [];
      const stale = increment(a, async () => {
        // Queued behind the running group: the next group under the same taking of the lock.
        queued = Array.from({ length: 5 }, (_, i) => a.mutate((tx) => tx.insert("counters", { n: 100 + i })));
        await endLockBackend(server, table, "deployment:shared");
        await increment(b);
      });
      await expect(stale).rejects.toMatchObject({ code: "unavailable", cause: LOCK_LOST });
      await Promise.all(queued);
      expect((await counter(b)).n).toBe(1);
      const { value: rows } = await b.query((tx) =>
        tx.query({ table: "counters", index: "by_creation", range: [], order: "asc" }, { kind: "count" }),
      );
      expect(rows).toMatchObject({ kind: "count", count: 6 });
      await expectExact(b);
      await expectExact(a);
    }));

  it("refuses fenced batches, clears and commits, small and chunked, once the lock is lost; lands them while it is held", async () => {
    const table = freshTable();
    const store = await PostgresKv.open(server.url, { table });
    const other = await PostgresKv.open(server.url, { table });
    const key = (i: number) => Buffer.from(`k${String(i).padStart(4, "0")}`);
    // Large enough to go as several chunks (postgres-write.ts).
    const big = Array.from({ length: 40 }, (_, i) => ({
      type: "put" as const,
      key: key(i),
      value: "x".repeat(64 * 1024),
    }));
    try {
      const landed = await store.bus.lockAcrossProcesses("held", async (_read, fence) => {
        expect(fence).toBeDefined();
        await store.batch([{ type: "put", key: key(9000), value: "batch" }], [], fence);
        await store.batch([{ type: "put", key: key(9050), value: "cleared" }], [], fence);
        await store.clear({ gte: key(9050), lt: key(9051) }, fence);
        await store.batch(big, [], fence);
        const snapshot = await store.lazySnapshot();
        await snapshot.get(key(0));
        const next = await store.commitAndContinue(
          snapshot,
          [{ type: "put", key: key(9001), value: "continued" }],
          undefined,
          [key(9000)],
          "",
          fence,
        );
        expect(next?.tryGetSync(key(9000))).toBe("batch");
        await store.commit(
          next as NonNullable<typeof next>,
          [{ type: "put", key: key(9002), value: "commit" }],
          undefined,
          fence,
        );
        return (await collect(store.iterate({ gte: key(9000), lt: key(9999) }))).map(([, v]) => v);
      });
      expect(landed).toEqual(["batch", "continued", "commit"]);
      expect((await collect(store.iterate({ gte: key(0), lt: key(40) }))).length).toBe(40);

      let kept: LockFence | undefined;
      await store.bus.lockAcrossProcesses("lost", async (_read, fence) => {
        kept = fence;
        await endLockBackend(server, table, "lost");
        // Another process takes the lock as soon as the server let go of it.
        await other.bus.lockAcrossProcesses("lost", async () => {});
        const lost = { code: "unavailable", cause: LOCK_LOST };
        await expect(
          store.batch([{ type: "put", key: key(9100), value: "late" }], [], fence),
        ).rejects.toMatchObject(lost);
        await expect(store.clear({ gte: key(0), lt: key(40) }, fence)).rejects.toMatchObject(lost);
        await expect(
          store.batch(
            big.map((op) => ({ ...op, key: Buffer.concat([Buffer.from("z"), op.key]) })),
            [],
            fence,
          ),
        ).rejects.toMatchObject(lost);
        const snapshot = await store.lazySnapshot();
        await snapshot.get(key(0));
        await expect(
          store.commitAndContinue(
            snapshot,
            [{ type: "put", key: key(9101), value: "late" }],
            undefined,
            [key(0)],
            "",
            fence,
          ),
        ).rejects.toMatchObject(lost);
        const another = await store.lazySnapshot();
        await another.get(key(0));
        await expect(
          store.commit(another, [{ type: "put", key: key(9102), value: "late" }], undefined, fence),
        ).rejects.toMatchObject(lost);
      });
      expect(kept).toBeDefined();
      // A write after the lock was let go is refused as well.
      await expect(
        store.batch([{ type: "put", key: key(9103), value: "after" }], [], kept),
      ).rejects.toMatchObject({
        cause: LOCK_LOST,
      });
      expect(await collect(store.iterate({ gte: key(9100), lt: key(9200) }))).toEqual([]);
      // The refused clear deleted nothing.
      expect((await collect(store.iterate({ gte: key(0), lt: key(40) }))).length).toBe(40);
      expect(await collect(store.iterate({ gte: Buffer.from("z"), lt: Buffer.from("{") }))).toEqual([]);
    } finally {
      await store.close();
      await other.close();
    }
  });

  it("gives a host lock's work its fence, which records' batches check (storage quotas write so)", async () => {
    const db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table: freshTable() }));
    try {
      const usage = db.records<{ bytes: number }>("usage");
      let kept: LockFence | undefined;
      await db.exclusive("quota:owner", async (fence) => {
        kept = fence;
        await usage.batch([{ id: "owner", value: { bytes: 10 } }], [], fence);
      });
      expect(await usage.get("owner")).toEqual({ bytes: 10 });
      // Its lock let go of (on the server once taken again: a lock's end is sent, not waited for),
      // the fence no longer holds.
      await db.exclusive("quota:owner", async () => {});
      await expect(usage.batch([{ id: "owner", value: { bytes: 99 } }], [], kept)).rejects.toMatchObject({
        code: "unavailable",
        cause: LOCK_LOST,
      });
      expect(await usage.get("owner")).toEqual({ bytes: 10 });
    } finally {
      await db.close();
    }
  });

  it("makes the next holder wait for a fenced write on its way, and read what it wrote", async () => {
    const table = freshTable();
    const store = await PostgresKv.open(server.url, { table });
    const other = await PostgresKv.open(server.url, { table });
    const key = Buffer.from("counted");
    const writer = new pg.Client({ connectionString: server.url });
    await writer.connect();
    try {
      await store.batch([{ type: "put", key, value: "0" }]);
      let taken: Promise<Array<string | undefined> | undefined> | undefined;
      let readByNext: Array<string | undefined> | undefined;
      await store.bus.lockAcrossProcesses("racing", async (_read, fence) => {
        // A write under the lock has passed its guard (its transaction holds the barrier)...
        await writer.query(`BEGIN; SELECT ${fence?.guards.join(", ")}`);
        // ...when the lock's backend is ended and another process takes the lock.
        await endLockBackend(server, table, "racing");
        taken = other.bus.lockAcrossProcesses("racing", async (read) => read, { read: [key] });
        const answered = await Promise.race([
          taken.then(() => "taken"),
          new Promise((resolve) => setTimeout(resolve, 500, "waiting")),
        ]);
        expect(answered).toBe("waiting");
        await writer.query(`UPDATE ${table} SET value = '1' WHERE key = $1`, [key]);
        await writer.query("COMMIT");
        readByNext = await taken;
      });
      expect(readByNext).toEqual(["1"]);
    } finally {
      await writer.end();
      await store.close();
      await other.close();
    }
  });
});
