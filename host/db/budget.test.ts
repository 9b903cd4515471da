import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { capsule, type Id, number, string, table } from "../../sdk/server/index.js";
import { tempDatabase, typedDb } from "../../test/helpers/db.js";
import { concurrentScansStayInBudget } from "../../test/helpers/scan-turns.js";
import type { TenantDatabase, Transaction } from "./index.js";

const app = capsule({
  schema: {
    items: table({ n: number(), group: string() }).index("by_group", ["group"]),
    blobs: table({ body: string() }),
  },
});

let env: Awaited<ReturnType<typeof tempDatabase>>;
let deployment: TenantDatabase;
let t: ReturnType<typeof typedDb<typeof app.definition.schema>>;

beforeAll(async () => {
  env = await tempDatabase();
  deployment = await env.db.deployment("budget");
  await deployment.migrate(app.declaration.schema);
  t = typedDb(deployment, app);
  await t.write(async (d) => {
    for (let i = 0; i < 6000; i++)
      await d.items.insert({ n: i, group: i < 1200 ? "big" : i < 5500 ? "huge" : "small" });
    const mib = "x".repeat(1024 * 1024);
    for (let i = 0; i < 5; i++) await d.blobs.insert({ body: mib });
  });
});
afterAll(() => env.dispose());

const ROWS_RETURNED = "Database rowsReturned limit exceeded (1000).";
const ROWS_READ = "Database rowsRead limit exceeded (5000).";
const BYTES_READ = "Database bytesRead limit exceeded (4194304).";
const COLLECT = "collect() exceeded the 1000 row return limit. Use paginate().";

describe("read budgets", () => {
  it("collect() of more than 1000 rows fails with its own message", async () => {
    await expect(
      t.read((d) => d.items.withIndex("by_group", (q) => q.eq("group", "big")).collect()),
    ).rejects.toMatchObject({
      code: "limit_exceeded",
      message: COLLECT,
    });
  });

  it("collect() of exactly 1000 rows is allowed", async () => {
    const { value, usage } = await t.read((d) => d.items.withIndex("by_group").take(1000));
    expect(value).toHaveLength(1000);
    expect(usage).toMatchObject({ rowsReturned: 1000, rowsRead: 1000, indexScans: 1 });
  });

  it("several calls together cannot return more than 1000 rows", async () => {
    await expect(
      t.read(async (d) => {
        await d.items.take(600);
        await d.items.withIndex("by_group", (q) => q.eq("group", "small")).collect();
        return d.items.take(600);
      }),
    ).rejects.toMatchObject({ message: ROWS_RETURNED });
    await expect(
      t.read(async (d) => {
        await d.items.paginate({ cursor: null, numItems: 700 });
        return d.items.paginate({ cursor: null, numItems: 700 });
      }),
    ).rejects.toMatchObject({ message: ROWS_RETURNED });
  });

  it("count() counts index entries as rows read and throws rather than give a partial count", async () => {
    const { value, usage } = await t.read((d) =>
      d.items.withIndex("by_group", (q) => q.eq("group", "huge")).count(),
    );
    expect(value).toBe(4300);
    expect(usage).toMatchObject({ rowsRead: 4300, rowsReturned: 0, bytesRead: 0 });
    await expect(t.read((d) => d.items.count())).rejects.toMatchObject({ message: ROWS_READ });
    await expect(
      t.read(async (d) => {
        await d.items.withIndex("by_group", (q) => q.eq("group", "huge")).count();
        return d.items.withIndex("by_group", (q) => q.eq("group", "big")).count();
      }),
    ).rejects.toMatchObject({ message: ROWS_READ });
  });

  it("stops at 4 MiB of row bytes", async () => {
    await expect(t.read((d) => d.blobs.take(5))).rejects.toMatchObject({ message: BYTES_READ });
    const { value } = await t.read((d) => d.blobs.take(3));
    expect(value).toHaveLength(3);
  });

  it("runs a handler's scans in turn: 200 started at once fetch no more than the budget allows", async () => {
    const own = await tempDatabase();
    try {
      await concurrentScansStayInBudget(own.db);
    } finally {
      await own.dispose();
    }
  });

  it("fails the handler even when it catches the limit error", async () => {
    await expect(
      t.read(async (d) => {
        try {
          await d.items.collect();
        } catch {
          return "swallowed";
        }
      }),
    ).rejects.toMatchObject({ message: COLLECT });
  });

  it("rolls back every write when a budget error ends a mutation, caught or not", async () => {
    const before = (await t.read((d) => d.blobs.count())).value;
    await expect(
      t.write(async (d) => {
        await d.blobs.insert({ body: "new" });
        return d.items.collect();
      }),
    ).rejects.toMatchObject({ message: COLLECT });
    await expect(
      t.write(async (d) => {
        await d.blobs.insert({ body: "new" });
        await d.items.count().catch(() => 0);
        return "ok";
      }),
    ).rejects.toMatchObject({ message: ROWS_READ });
    expect((await t.read((d) => d.blobs.count())).value).toBe(before);
  });

  it("counts the rows a mutation's own pending deletes hide from its scans as read", async () => {
    const { value: ids } = await t.write(async (d) => {
      const made: Id<"items">[] = [];
      for (let i = 0; i < 30; i++) made.push(await d.items.insert({ n: i, group: "hidden" }));
      return made;
    });
    // The first 20 deleted: a take of 5 passes them (stored, hidden by the deletes) before its 5.
    const { value, usage } = await t.write(async (d) => {
      for (const id of ids.slice(0, 20)) await d.items.delete(id);
      return d.items.withIndex("by_group", (q) => q.eq("group", "hidden")).take(5);
    });
    expect(value.map((row) => row.n)).toEqual([20, 21, 22, 23, 24]);
    expect(usage).toMatchObject({ rowsReturned: 5, rowsRead: 25 });
  });

  it("stops a mutation that scans past its own deletes again and again", async () => {
    // 1,300 rows written and deleted in the mutation, then its first row asked for 4 times: each
    // passes 1,300 deleted entries (4,000 such scans of 4,000 held the main thread 15 s).
    await expect(
      t.write(async (d) => {
        const made: Id<"items">[] = [];
        for (let i = 0; i < 1300; i++) made.push(await d.items.insert({ n: i, group: "churn" }));
        for (const id of made) await d.items.delete(id);
        for (let i = 0; i < 4; i++)
          await d.items.withIndex("by_group", (q) => q.eq("group", "churn")).first();
        throw new Error("The scans should have failed.");
      }),
    ).rejects.toMatchObject({ code: "limit_exceeded", message: ROWS_READ });
  });

  it("does not charge a mutation for rows an earlier member of its group commit deleted, and bounds them apart", async () => {
    const most = LIMITS.rowsHiddenByGroup;
    /**
     * Runs `scan` in a mutation queued right behind one that deletes 30 rows of a fresh group, both
     * held until queued so that they commit together; answers its outcome once it ran in that
     * group (a busy machine may start a new group between them: then again, with new rows).
     */
    const behindDeletes = async (scan: (tx: Transaction, group: string) => Promise<unknown>) => {
      for (let attempt = 0; attempt < 20; attempt++) {
        const group = `deleted${attempt}-${Math.random()}`;
        const { value: ids } = await t.write(async (d) => {
          const made: Id<"items">[] = [];
          for (let i = 0; i < 35; i++) made.push(await d.items.insert({ n: i, group }));
          return made;
        });
        let release!: () => void;
        const held = deployment.mutate(() => new Promise<void>((resolve) => (release = resolve)));
        await new Promise((resolve) => setImmediate(resolve));
        const deleting = deployment.mutate(async (tx) => {
          for (const id of ids.slice(0, 30)) await tx.delete("items", id);
        });
        let grouped = false;
        const scanning = deployment
          .mutate(async (tx) => {
            // The deletes before it are in its overlay, not yet in its snapshot.
            grouped = tx.overlay.size > 0;
            return scan(tx, group);
          })
          .then(
            (result) => ({ result }),
            (error: unknown) => ({ error }),
          );
        release();
        await held;
        await deleting;
        const outcome = await scanning;
        if (grouped) return outcome;
      }
      throw new Error("The two mutations never committed in one group.");
    };
    const firstFive = (tx: Transaction, group: string) =>
      tx.query(
        {
          table: "items",
          index: "by_group",
          range: [{ op: "eq", field: "group", value: group }],
          order: "asc",
        },
        { kind: "take", n: 5 },
      );
    const charged = await behindDeletes(firstFive);
    expect(charged).toMatchObject({ result: { usage: { rowsReturned: 5, rowsRead: 5 } } });
    try {
      (LIMITS as { rowsHiddenByGroup: number }).rowsHiddenByGroup = 10;
      const refused = await behindDeletes(firstFive);
      expect(refused).toMatchObject({ error: { code: "unavailable" } });
      expect((refused as { error: Error }).error.message).toContain("retry it once they have committed");
    } finally {
      (LIMITS as { rowsHiddenByGroup: number }).rowsHiddenByGroup = most;
    }
  });
});
