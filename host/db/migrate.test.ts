import { ClassicLevel } from "classic-level";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { boolean, capsule, string, table, userId } from "../../sdk/server/index.js";
import type { SchemaSpec } from "../../sdk/values/index.js";
import { tempDatabase, transactionExecutor } from "../../test/helpers/db.js";
import { afterPrefix } from "./codec.js";
import { HostDatabase, type TenantDatabase } from "./index.js";
import { indexPrefix, metaKey, rowPrefix } from "./keys.js";
import { collect, type KvOperation } from "./kv/index.js";
import { DeployReferenceChecks } from "./retargeted-ids.js";

const v1 = capsule({ schema: { todos: table({ text: string(), owner: userId() }) } }).declaration.schema;

let env: Awaited<ReturnType<typeof tempDatabase>>;
let deployment: TenantDatabase;

beforeEach(async () => {
  env = await tempDatabase();
  deployment = await env.db.deployment("m");
  await deployment.migrate(v1);
  await deployment.mutate(async (tx) => {
    for (let i = 0; i < 50; i++)
      await tx.insert("todos", { text: `t${i}`, owner: i % 2 ? "guest:a" : "guest:b" });
  });
});
afterEach(() => env.dispose());

async function rawRows(): Promise<string[]> {
  const prefix = rowPrefix("m", "todos");
  return (await collect(env.db.store.iterate({ gte: prefix, lt: afterPrefix(prefix) }))).map(([, v]) => v);
}

async function indexEntries(name: string): Promise<number> {
  const stored = deployment.schema.tables.todos?.indexes[name];
  if (!stored) return -1;
  const prefix = indexPrefix("m", "todos", stored.storageId);
  return (await collect(env.db.store.iterate({ gte: prefix, lt: afterPrefix(prefix), values: false })))
    .length;
}

function withTodos(fields: Record<string, unknown>, indexes: Record<string, string[]> = {}): SchemaSpec {
  return { tables: { todos: { fields: { ...v1.tables.todos!.fields, ...fields } as never, indexes } } };
}

describe("schema migration", () => {
  it("refuses a required field without default on a table with rows, and keeps serving", async () => {
    const spec = withTodos({ done: { kind: "boolean", optional: false } });
    await expect(deployment.migrate(spec)).rejects.toMatchObject({
      code: "bad_request",
      message: "Missing value for todos.done",
    });
    expect(deployment.schema.tables.todos?.spec.fields).not.toHaveProperty("done");
    expect(
      (
        await deployment.query((tx) =>
          tx.query({ table: "todos", index: "by_creation", range: [], order: "asc" }, { kind: "count" }),
        )
      ).value,
    ).toEqual({
      kind: "count",
      count: 50,
    });
    const empty = await env.db.deployment("empty");
    await empty.migrate(v1);
    await expect(empty.migrate(spec)).resolves.toBeDefined();
  });

  it("adds optional and defaulted fields without rewriting rows, indexable at once", async () => {
    const before = await rawRows();
    const spec = capsule({
      schema: {
        todos: table({
          text: string(),
          owner: userId(),
          done: boolean().default(false),
          note: string().optional(),
        }).index("by_done", ["done"]),
      },
    }).declaration.schema;
    const progress: number[] = [];
    const report = await deployment.migrate(spec, (p) => progress.push(p.done));
    expect(await rawRows()).toEqual(before);
    expect(report.built.map((b) => b.index)).toEqual(["by_done"]);
    expect(progress.at(-1)).toBe(50);
    const { value } = await deployment.query(async (tx) =>
      transactionExecutor(tx).query(
        {
          table: "todos",
          index: "by_done",
          range: [{ op: "eq", field: "done", value: false }],
          order: "asc",
        },
        { kind: "collect" },
      ),
    );
    expect((value as Array<{ done: boolean }>).length).toBe(50);
    expect((value as Array<{ done: boolean }>)[0]?.done).toBe(false);
  });

  it("backfills new indexes from stored rows and deletes dropped ones", async () => {
    await deployment.migrate(withTodos({}, { by_text: ["text"] }));
    expect(await indexEntries("by_text")).toBe(50);
    const dropped = deployment.schema.tables.todos!.indexes.by_text!;
    await deployment.migrate(withTodos({}, { by_owner_text: ["owner", "text"] }));
    expect(await indexEntries("by_owner_text")).toBe(50);
    const prefix = indexPrefix("m", "todos", dropped.storageId);
    expect(await collect(env.db.store.iterate({ gte: prefix, lt: afterPrefix(prefix) }))).toEqual([]);
  });

  it("keeps a hidden index on every userId() field", async () => {
    expect(await indexEntries("$user:owner")).toBe(50);
    expect(await indexEntries("by_creation")).toBe(50);
  });

  it("refuses a type change that stored rows do not fit, and a field removal that would orphan values", async () => {
    await expect(
      deployment.migrate(withTodos({ text: { kind: "number", optional: false } })),
    ).rejects.toMatchObject({
      message: expect.stringMatching(
        /^Existing row \S+ does not fit todos.text: expected number, got string. Keep the field's type, or first change or delete the rows that do not fit \(a mutation\), then deploy again.$/,
      ),
    });
    await expect(
      deployment.migrate({
        tables: { todos: { fields: { owner: { kind: "userId", optional: false } }, indexes: {} } },
      }),
    ).rejects.toMatchObject({
      message: expect.stringMatching(/^Cannot remove field todos.text: row \S+ still has a value/),
    });
  });

  it("checks that every value of a field turned into id(t) names a row of t", async () => {
    // Before, a string() or id("a") field became id("b") whatever it held; b.get(value) then
    // answered null for values the schema called ids of b.
    const twoTables = (ref: Record<string, unknown>): SchemaSpec => ({
      tables: {
        lists: { fields: { name: { kind: "string", optional: false } }, indexes: {} },
        tags: { fields: { name: { kind: "string", optional: false } }, indexes: {} },
        todos: { fields: { ...v1.tables.todos!.fields, ref } as never, indexes: {} },
      },
    });
    await deployment.migrate(twoTables({ kind: "string", optional: true }));
    const { value: ids } = await deployment.mutate(async (tx) => ({
      list: await tx.insert("lists", { name: "l" }),
      tag: await tx.insert("tags", { name: "t" }),
    }));
    const todoId = (JSON.parse((await rawRows())[0] as string) as { id: string }).id;
    await deployment.mutate((tx) => tx.update("todos", todoId, { ref: ids.tag }));
    const toLists = twoTables({ kind: "id", table: "lists", optional: true });
    const refusal = {
      code: "bad_request",
      message: `Cannot make todos.ref an id("lists") field: row ${todoId} holds ${JSON.stringify(ids.tag)}, which names no row of lists. Point such rows at rows of lists, or clear the field in them (make it optional first), then deploy again.`,
    };
    await expect(deployment.migrate(toLists)).rejects.toMatchObject(refusal);
    expect(deployment.schema.tables.todos?.spec.fields.ref?.kind).toBe("string");
    // Pointing at a row of lists, it goes through; and id("lists") -> id("tags") is checked again.
    await deployment.mutate((tx) => tx.update("todos", todoId, { ref: ids.list }));
    await deployment.migrate(toLists);
    await expect(
      deployment.migrate(twoTables({ kind: "id", table: "tags", optional: true })),
    ).rejects.toMatchObject({
      message: expect.stringContaining(`Cannot make todos.ref an id("tags") field: row ${todoId}`),
    });
    // A field that stays id("lists") is not checked again: a row deleted later does not block deploys.
    await deployment.mutate((tx) => tx.delete("lists", ids.list));
    const withDone = twoTables({ kind: "id", table: "lists", optional: true });
    (withDone.tables.todos!.fields as Record<string, unknown>).done = { kind: "boolean", optional: true };
    await deployment.migrate(withDone);
  });

  it("checks each value named by a field turned into id(t) by its key alone, and at most so many a deploy", async () => {
    // Before, each check read the target row whole, synchronously on classic-level: rows of many
    // fields naming one row of megabytes held the host's main thread for seconds.
    const spec = (ref: Record<string, unknown>): SchemaSpec => ({
      tables: {
        ...v1.tables,
        big: { fields: { blob: { kind: "string", optional: false } }, indexes: {} },
        refs: {
          fields: Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`r${i}`, ref])) as never,
          indexes: {},
        },
      },
    });
    await deployment.migrate(spec({ kind: "string", optional: true }));
    const { value: target } = await deployment.mutate((tx) =>
      tx.insert("big", { blob: "x".repeat(1_000_000) }),
    );
    await deployment.mutate(async (tx) => {
      for (let i = 0; i < 300; i++)
        await tx.insert("refs", Object.fromEntries(Array.from({ length: 8 }, (_, f) => [`r${f}`, target])));
    });
    const reads = [vi.spyOn(ClassicLevel.prototype, "getSync"), vi.spyOn(ClassicLevel.prototype, "get")];
    try {
      await deployment.migrate(spec({ kind: "id", table: "big", optional: true }));
      // No row of the target table is read (the migration's own metadata may be).
      const big = rowPrefix("m", "big");
      for (const read of reads)
        for (const [key] of read.mock.calls)
          expect(Buffer.from(key as Buffer).subarray(0, big.length)).not.toEqual(big);
    } finally {
      for (const read of reads) read.mockRestore();
    }
    expect(deployment.schema.tables.refs?.spec.fields.r0?.kind).toBe("id");
    const checks = new DeployReferenceChecks();
    const fields = [{ field: "r0", target: "big" }];
    checks.count(LIMITS.referencesCheckedPerDeploy, "refs", fields);
    expect(() => checks.count(1, "refs", fields)).toThrow(
      `This deploy turns refs.r0 (id("big")) into id() fields, and each value they hold must be checked: more than ${LIMITS.referencesCheckedPerDeploy} values.`,
    );
  });

  it("refuses to drop a table that has rows", async () => {
    await expect(deployment.migrate({ tables: {} })).rejects.toMatchObject({
      message: "Table todos still has rows; delete them before removing the table from the schema.",
    });
  });

  it("refuses invalid schemas with clear messages", async () => {
    await expect(
      deployment.migrate({ tables: { "bad name": { fields: {}, indexes: {} } } }),
    ).rejects.toMatchObject({ code: "bad_request" });
    await expect(deployment.migrate(withTodos({}, { by_x: ["nope"] }))).rejects.toMatchObject({
      message: 'Invalid schema: index todos.by_x names "nope", which is not a field of todos.',
    });
    await expect(
      deployment.migrate(withTodos({ ref: { kind: "id", table: "ghosts", optional: true } })),
    ).rejects.toMatchObject({
      message: 'Invalid schema: todos.ref is id("ghosts"), but the schema has no such table.',
    });
    await expect(
      deployment.migrate(withTodos({ createdAt: { kind: "number", optional: true } })),
    ).rejects.toMatchObject({
      message: "Invalid schema: todos.createdAt is a system field; every row already has it.",
    });
  });

  it("rebuilds an index when a field's default changes, and fills defaults added later on read", async () => {
    await deployment.migrate(
      withTodos({ score: { kind: "number", optional: true } }, { by_score: ["score"] }),
    );
    await deployment.mutate((tx) => tx.insert("todos", { text: "scored", owner: "guest:a", score: 3 }));
    await deployment.migrate(
      withTodos({ score: { kind: "number", optional: true, default: 1 } }, { by_score: ["score"] }),
    );
    const { value } = await deployment.query(async (tx) => ({
      ones: await tx.query(
        { table: "todos", index: "by_score", range: [{ op: "eq", field: "score", value: 1 }], order: "asc" },
        { kind: "count" },
      ),
      oldest: await tx.query(
        { table: "todos", index: "by_creation", range: [], order: "asc" },
        { kind: "first" },
      ),
    }));
    expect(value.ones).toEqual({ kind: "count", count: 50 });
    expect(JSON.parse((value.oldest as { row: string }).row)).toMatchObject({ text: "t0", score: 1 });
  });

  it("refuses changing or removing a default rows stored before it read, until each holds a value", async () => {
    const scored = (score: Record<string, unknown>) => withTodos({ score: { kind: "number", ...score } });
    await deployment.migrate(scored({ optional: true, default: 1 }));
    const added = await deployment.mutate((tx) => tx.insert("todos", { text: "new", owner: "guest:a" }));
    // The 50 rows stored before the default hold no score and read 1; the new one holds 1.
    for (const change of [
      { optional: true, default: 2 },
      { optional: true },
      { optional: false, default: 0 },
    ]) {
      await expect(deployment.migrate(scored(change))).rejects.toMatchObject({
        code: "bad_request",
        message: expect.stringMatching(
          /^Cannot change or remove the default of todos\.score: row \S+ was stored before the default 1 was added, holds no value and reads it\. Keep the default, or first write the value into such rows/,
        ),
      });
    }
    const read = async () =>
      (await deployment.query((tx) => tx.get("todos", added.value))).value as string | null;
    expect(JSON.parse((await read()) as string)).toMatchObject({ score: 1 });
    // Once every row holds a value, the default may change: no row reads it any more.
    const { value: rows } = await deployment.query((tx) =>
      tx.query({ table: "todos", index: "by_creation", range: [], order: "asc" }, { kind: "take", n: 100 }),
    );
    await deployment.mutate(async (tx) => {
      for (const row of (rows as { rows: string[] }).rows) {
        const { id, score } = JSON.parse(row) as { id: string; score?: number };
        if (score === 1) await tx.update("todos", id, { score: 1 });
      }
    });
    await deployment.migrate(scored({ optional: true, default: 2 }));
    const { value: ones } = await deployment.query((tx) =>
      tx.query({ table: "todos", index: "by_creation", range: [], order: "asc" }, { kind: "take", n: 100 }),
    );
    expect(
      (ones as { rows: string[] }).rows.map((row) => (JSON.parse(row) as { score: number }).score),
    ).toEqual(Array(51).fill(1));
    expect(deployment.schema.tables.todos?.lateDefaults).toEqual([]);
  });

  it("keeps a query that began before a switch on the indexes it began with, whole", async () => {
    await deployment.migrate(withTodos({}, { by_text: ["text"] }));
    const count = (tx: Parameters<Parameters<TenantDatabase["query"]>[0]>[0]) =>
      tx.query({ table: "todos", index: "by_text", range: [], order: "asc" }, { kind: "count" });
    let resume = () => {};
    const paused = new Promise<void>((resolve) => {
      resume = resolve;
    });
    let began = () => {};
    const read = new Promise<void>((resolve) => {
      began = resolve;
    });
    // Its snapshot is taken by its first read, before the new by_text is built.
    const spanning = deployment.query(async (tx) => {
      const first = await count(tx);
      began();
      await paused;
      return [first, await count(tx)];
    });
    await read;
    const hash = deployment.schemaHash;
    const migrated = deployment.migrate(withTodos({}, { by_text: ["text", "owner"] }));
    await expect.poll(() => deployment.schemaHash).not.toBe(hash);
    // Switched: the old by_text is kept for the query, which still reads it whole.
    let cleared = false;
    void migrated.then(() => {
      cleared = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(cleared).toBe(false);
    // Recorded with the switch: a crash now leaves it for the next load to clear.
    const building = metaKey("m", "building");
    expect(await env.db.store.get(building)).toContain('"fields":["text"]');
    resume();
    expect((await spanning).value).toEqual([
      { kind: "count", count: 50 },
      { kind: "count", count: 50 },
    ]);
    expect((await migrated).dropped).toEqual([{ table: "todos", index: "by_text" }]);
    expect(await env.db.store.get(building)).toBeUndefined();
    expect((await deployment.query(count)).value).toEqual({ kind: "count", count: 50 });
  });

  it("clears index entries an earlier migration left listed, which a PostgreSQL host never clears at load (found by review)", async () => {
    // As a host that died mid-build (or while its dropped indexes waited for their readers) leaves
    // them: entries under a storage id no index names, listed under `building`. Classic-level
    // clears them at load; on PostgreSQL they stayed for good, outside the row quota.
    const abandoned = { fields: ["text"], storageId: "abandoned", signature: "x" };
    const prefix = indexPrefix("m", "todos", abandoned.storageId);
    const building = metaKey("m", "building");
    await env.db.store.batch([
      ...Array.from({ length: 20 }, (_, i) => ({
        type: "put" as const,
        key: Buffer.concat([prefix, Buffer.from([1, i])]),
        value: "{}",
      })),
      { type: "put", key: building, value: JSON.stringify([{ table: "todos", stored: abandoned }]) },
    ]);
    const left = () => collect(env.db.store.iterate({ gte: prefix, lt: afterPrefix(prefix), values: false }));
    expect(await left()).toHaveLength(20);
    // The next migration, adding an index, clears them once it has switched.
    await deployment.migrate(withTodos({}, { by_text: ["text"] }));
    expect(await left()).toHaveLength(0);
    expect(await env.db.store.get(building)).toBeUndefined();
    expect(await indexEntries("by_text")).toBe(50);
    // Listed a moment ago, they are another migration's, whose clearing may be waiting for its
    // queries on other hosts: left listed, and left alone.
    const recent = { table: "todos", stored: abandoned, listedAt: Date.now() };
    await env.db.store.batch([
      { type: "put", key: Buffer.concat([prefix, Buffer.from([1, 0])]), value: "{}" },
      { type: "put", key: building, value: JSON.stringify([recent]) },
    ]);
    await deployment.migrate(withTodos({}, { by_text: ["text"], by_owner: ["owner"] }));
    expect(await left()).toHaveLength(1);
    expect(JSON.parse((await env.db.store.get(building)) as string)).toEqual([recent]);
  });

  it("fails a query still reading through a schema whose dropped indexes are cleared, to retry", async () => {
    await deployment.migrate(withTodos({}, { by_text: ["text"] }));
    const old = deployment.tables;
    let resume = () => {};
    const paused = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const spanning = deployment.query(async (tx) => {
      await tx.get("todos", "AAAAAAAAAAAAAAAAAAAAAA");
      await paused;
      return tx.query({ table: "todos", index: "by_text", range: [], order: "asc" }, { kind: "count" });
    });
    const migrated = deployment.migrate(withTodos({}, {}));
    await expect.poll(() => deployment.tables).not.toBe(old);
    // As when its handler's wall time passed: the migration stops waiting and clears.
    deployment.retire(old);
    resume();
    await expect(spanning).rejects.toMatchObject({ code: "unavailable" });
    expect((await migrated).dropped).toEqual([{ table: "todos", index: "by_text" }]);
    expect(await indexEntries("by_text")).toBe(-1);
  });

  it("writes what switches with the schema in the batch that stores it, and nothing when refused", async () => {
    const store = env.db.store;
    const batches: KvOperation[][] = [];
    const batch = store.batch.bind(store);
    store.batch = (operations) => {
      batches.push(operations);
      return batch(operations);
    };
    const record = Buffer.from("switch-test-record");
    const switchedAt: string[] = [];
    const switching = (value: string) => ({
      operations: [{ type: "put" as const, key: record, value }],
      switched: () => switchedAt.push(deployment.schemaHash),
    });
    try {
      await expect(
        deployment.migrate(withTodos({ done: { kind: "boolean", optional: false } }), undefined, {
          switching: switching("refused"),
        }),
      ).rejects.toMatchObject({ message: "Missing value for todos.done" });
      expect(await store.get(record)).toBeUndefined();
      expect(switchedAt).toEqual([]);

      await deployment.migrate(withTodos({}, { by_text: ["text"] }), undefined, {
        switching: switching("v2"),
      });
      const schemaKey = metaKey("m", "schema");
      const together = batches.filter((operations) => operations.some((op) => op.key.equals(schemaKey)));
      expect(together).toHaveLength(1);
      expect(together[0]?.some((op) => op.key.equals(record) && op.type === "put" && op.value === "v2")).toBe(
        true,
      );
      // Called once the schema serves, before anything else of the migration is awaited.
      expect(switchedAt).toEqual([deployment.schemaHash]);
    } finally {
      store.batch = batch;
    }
  });

  it("survives reopening: schema, data and the createdAt clock", async () => {
    const last = (
      await deployment.query((tx) =>
        tx.query({ table: "todos", index: "by_creation", range: [], order: "desc" }, { kind: "first" }),
      )
    ).value;
    const lastCreatedAt = (JSON.parse((last as { row: string }).row) as { createdAt: number }).createdAt;
    await env.db.close();
    const reopened = await HostDatabase.open(env.dir);
    env.db = reopened;
    const again = await reopened.deployment("m");
    await again.mutate((tx) => tx.insert("todos", { text: "later", owner: "guest:c" }), { now: 0 });
    const { value } = await again.query((tx) =>
      tx.query({ table: "todos", index: "by_creation", range: [], order: "desc" }, { kind: "first" }),
    );
    const row = JSON.parse((value as { row: string }).row) as { text: string; createdAt: number };
    expect(row.text).toBe("later");
    expect(row.createdAt).toBeGreaterThan(lastCreatedAt);
  });
});
