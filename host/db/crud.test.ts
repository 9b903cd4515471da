import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { boolean, capsule, type Id, id, number, string, table, userId } from "../../sdk/server/index.js";
import { tempDatabase, typedDb } from "../../test/helpers/db.js";
import type { HostDatabase, TenantDatabase } from "./index.js";
import { collect } from "./kv/index.js";

const app = capsule({
  schema: {
    lists: table({ name: string() }),
    todos: table({
      text: string(),
      done: boolean().default(false),
      priority: number().optional(),
      rank: number().optional().default(5),
      owner: userId().optional(),
      list: id("lists").optional(),
    })
      .index("by_done", ["done"])
      .index("by_priority", ["priority"])
      .index("by_list", ["list"]),
  },
});

let env: Awaited<ReturnType<typeof tempDatabase>>;
let db: HostDatabase;
let deployment: TenantDatabase;
let t: ReturnType<typeof typedDb<typeof app.definition.schema>>;

beforeEach(async () => {
  env = await tempDatabase();
  db = env.db;
  deployment = await db.deployment("dep1");
  await deployment.migrate(app.declaration.schema);
  t = typedDb(deployment, app);
});
afterEach(() => env.dispose());

describe("rows", () => {
  it("inserts with defaults, id and increasing createdAt", async () => {
    const { value: ids } = await t.write(async (d) => [
      await d.todos.insert({ text: "a" }),
      await d.todos.insert({ text: "b" }),
    ]);
    const { value: rows } = await t.read((d) => d.todos.collect());
    expect(rows.map((r) => r.text)).toEqual(["a", "b"]);
    expect(rows[0]).toMatchObject({ id: ids[0], done: false, rank: 5 });
    expect(rows[0]).not.toHaveProperty("priority");
    expect(rows[1]!.createdAt).toBeGreaterThan(rows[0]!.createdAt);
    expect(ids[0]).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it("treats null as no value on insert and update, never storing null", async () => {
    const { value: rowId } = await t.write((d) => d.todos.insert({ text: "a", priority: 3, rank: null }));
    await t.write((d) => d.todos.update(rowId, { priority: null, rank: 9 }));
    let row = (await t.read((d) => d.todos.get(rowId))).value!;
    expect(row).not.toHaveProperty("priority");
    expect(row.rank).toBe(9);
    await t.write((d) => d.todos.update(rowId, { rank: null }));
    row = (await t.read((d) => d.todos.get(rowId))).value!;
    expect(row.rank).toBe(5);
    const everything = await collect(db.store.iterate({ gte: Buffer.alloc(0), lt: Buffer.from([0xff]) }));
    const rows = everything.map(([, v]) => v).filter((v) => v.startsWith('{"id":'));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((v) => v.includes("null"))).toBe(false);
  });

  it("deletes a row and its index entries", async () => {
    const { value: rowId } = await t.write((d) => d.todos.insert({ text: "a", priority: 1 }));
    await t.write((d) => d.todos.delete(rowId));
    expect((await t.read((d) => d.todos.get(rowId))).value).toBeNull();
    expect((await t.read((d) => d.todos.withIndex("by_priority").count())).value).toBe(0);
    await expect(t.write((d) => d.todos.delete(rowId))).rejects.toMatchObject({ code: "not_found" });
  });

  it("rejects bad values with a message naming table and field", async () => {
    const cases: Array<[unknown, string]> = [
      [
        { text: "a", priority: Number.NaN },
        "Invalid value for todos.priority: NaN and Infinity are not allowed.",
      ],
      [
        { text: "a", priority: Number.POSITIVE_INFINITY },
        "Invalid value for todos.priority: NaN and Infinity are not allowed.",
      ],
      [{ text: "a\u0000b" }, "Invalid value for todos.text: strings cannot contain NUL characters."],
      [{ text: "a\ud800" }, "Invalid value for todos.text: strings cannot contain unpaired surrogates."],
      [{ text: 5 }, "Invalid value for todos.text: expected string, got number."],
      [{ text: "a", done: "yes" }, "Invalid value for todos.done: expected boolean, got string."],
      [{ text: "a", colour: "red" }, "Unknown field todos.colour."],
      [{}, "Missing value for todos.text"],
      [{ text: "a", owner: "" }, "Invalid value for todos.owner: user ids cannot be empty."],
      [{ text: "a", id: "x" }, "todos.id is set by the database and cannot be written."],
      [{ text: "a", list: "not-an-id" }, "Invalid value for todos.list: expected an id of table lists."],
    ];
    for (const [row, message] of cases) {
      await expect(
        t.write((d) => d.todos.insert(row as never)),
        JSON.stringify(row),
      ).rejects.toMatchObject({ code: "bad_request", message });
    }
  });

  it("checks that an id names a row of its table", async () => {
    const { value: todoId } = await t.write((d) => d.todos.insert({ text: "a" }));
    await expect(
      t.write((d) => d.todos.insert({ text: "b", list: todoId as unknown as Id<"lists"> })),
    ).rejects.toMatchObject({
      message: `Invalid value for todos.list: no row ${todoId} in table lists.`,
    });
    const { value: listId } = await t.write((d) => d.lists.insert({ name: "l" }));
    await t.write((d) => d.todos.insert({ text: "b", list: listId }));
    expect((await t.read((d) => d.lists.get(todoId as unknown as Id<"lists">))).value).toBeNull();
  });

  it("refuses writes in a read-only transaction", async () => {
    await expect(
      t.read((d) =>
        (d as never as { todos: { insert: (r: unknown) => Promise<void> } }).todos.insert({ text: "x" }),
      ),
    ).rejects.toMatchObject({
      code: "forbidden",
    });
  });
});

describe("queries", () => {
  beforeEach(async () => {
    await t.write(async (d) => {
      const list = await d.lists.insert({ name: "l" });
      for (let i = 0; i < 10; i++) {
        await d.todos.insert({
          text: `t${i}`,
          done: i % 2 === 0,
          ...(i < 8 ? { priority: i % 4 } : {}),
          ...(i < 3 ? { list } : {}),
        });
      }
    });
  });

  it("uses equality prefixes and ranges", async () => {
    const { value } = await t.read(async (d) => ({
      done: await d.todos.withIndex("by_done", (q) => q.eq("done", true)).collect(),
      absent: await d.todos.withIndex("by_priority", (q) => q.eq("priority", null)).collect(),
      gt1: await d.todos.withIndex("by_priority", (q) => q.gt("priority", 1)).collect(),
      lte1: await d.todos.withIndex("by_priority", (q) => q.lte("priority", 1)).count(),
      between: await d.todos.withIndex("by_priority", (q) => q.gte("priority", 1).lt("priority", 3)).count(),
      latest: await d.todos.order("desc").first(),
      take: await d.todos
        .withIndex("by_done", (q) => q.eq("done", false))
        .order("desc")
        .take(2),
    }));
    expect(value.done.map((r) => r.text)).toEqual(["t0", "t2", "t4", "t6", "t8"]);
    expect(value.absent.map((r) => r.text)).toEqual(["t8", "t9"]);
    expect(value.gt1.map((r) => r.priority)).toEqual([2, 2, 3, 3]);
    expect(value.lte1).toBe(4);
    expect(value.between).toBe(4);
    expect(value.latest?.text).toBe("t9");
    expect(value.take.map((r) => r.text)).toEqual(["t9", "t7"]);
  });

  it("ranges on createdAt after the declared fields", async () => {
    const { value } = await t.read(async (d) => {
      const all = await d.todos.collect();
      const cut = all[4]!.createdAt;
      return {
        after: await d.todos.withIndex("by_creation", (q) => q.gt("createdAt", cut)).count(),
        doneBefore: await d.todos
          .withIndex("by_done", (q) => q.eq("done", true).lt("createdAt", cut))
          .count(),
      };
    });
    expect(value).toEqual({ after: 5, doneBefore: 2 });
  });

  it("rejects ranges that break the index rules with clear errors", async () => {
    const bad = async (range: unknown[], message: string) => {
      await expect(
        deployment.query((tx) =>
          tx.query(
            { table: "todos", index: "by_priority", range: range as never, order: "asc" },
            { kind: "collect" },
          ),
        ),
      ).rejects.toMatchObject({ code: "bad_request", message });
    };
    await bad(
      [{ op: "eq", field: "done", value: true }],
      "Index todos.by_priority compares fields in order (priority, createdAt): expected priority, got done.",
    );
    await bad(
      [{ op: "gt", field: "priority", value: null }],
      "gt(priority, null) is not allowed: use eq(priority, null) to match rows without a value.",
    );
    await bad(
      [
        { op: "gt", field: "priority", value: 1 },
        { op: "gte", field: "priority", value: 2 },
      ],
      "Index range on todos.priority has two lower bounds.",
    );
    await bad(
      [{ op: "eq", field: "priority", value: "x" }],
      "Invalid value for todos.priority in an index range: expected number, got string.",
    );
    await expect(
      deployment.query((tx) =>
        tx.query({ table: "todos", index: "nope", range: [], order: "asc" }, { kind: "collect" }),
      ),
    ).rejects.toMatchObject({
      message: "Unknown index todos.nope.",
    });
    await expect(
      deployment.query((tx) =>
        tx.query({ table: "todos", index: "$user:owner", range: [], order: "asc" }, { kind: "collect" }),
      ),
    ).rejects.toMatchObject({
      message: "Unknown index todos.$user:owner.",
    });
  });

  it("paginates through a range exactly once, then reports isDone", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const { value: page } = await t.read(
        (d) => d.todos.withIndex("by_done").paginate({ cursor, numItems: 3 }),
        { handler: "list", argsJson: "{}" },
      );
      seen.push(...page.page.map((r) => r.text));
      cursor = page.continueCursor;
      if (page.isDone) break;
    }
    expect(seen).toEqual(["t1", "t3", "t5", "t7", "t9", "t0", "t2", "t4", "t6", "t8"]);
  });

  it("reads its own writes inside a mutation", async () => {
    const { value } = await t.write(async (d) => {
      const newId = await d.todos.insert({ text: "new", done: true, priority: 0 });
      const first = await d.todos.get(newId);
      await d.todos.update(newId, { priority: 99 });
      const top = await d.todos.withIndex("by_priority").order("desc").first();
      const done = await d.todos.withIndex("by_done", (q) => q.eq("done", true)).count();
      return { first: first?.text, top: top?.text, done };
    });
    expect(value).toEqual({ first: "new", top: "new", done: 6 });
  });
});
