import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capsule, number, string, table } from "../../sdk/server/index.js";
import { tempDatabase, typedDb } from "../../test/helpers/db.js";
import { type CursorBinding, CursorCodec } from "./cursor.js";
import type { TenantDatabase } from "./index.js";
import { indexEntryKey, materialize, parseStoredRow } from "./rows.js";
import type { CompiledIndex, CompiledTable } from "./stored-schema.js";

const app = capsule({
  schema: { items: table({ n: number(), secret: string() }).index("by_n", ["n"]) },
});

let env: Awaited<ReturnType<typeof tempDatabase>>;
let deployment: TenantDatabase;
let other: TenantDatabase;
let t: ReturnType<typeof typedDb<typeof app.definition.schema>>;

beforeAll(async () => {
  env = await tempDatabase();
  deployment = await env.db.deployment("a");
  other = await env.db.deployment("b");
  await deployment.migrate(app.declaration.schema);
  await other.migrate(app.declaration.schema);
  t = typedDb(deployment, app);
  await t.write(async (d) => {
    for (let i = 0; i < 20; i++) await d.items.insert({ n: i, secret: `hunter${i}` });
  });
});
afterAll(() => env.dispose());

const context = { handler: "list", argsJson: '{"a":1}' };

async function firstCursor(): Promise<string> {
  return (
    await t.read(
      (d) => d.items.withIndex("by_n", (q) => q.gte("n", 2)).paginate({ cursor: null, numItems: 5 }),
      context,
    )
  ).value.continueCursor;
}

describe("pagination cursors", () => {
  it("continue where the previous page ended", async () => {
    const cursor = await firstCursor();
    const { value } = await t.read(
      (d) => d.items.withIndex("by_n", (q) => q.gte("n", 2)).paginate({ cursor, numItems: 5 }),
      context,
    );
    expect(value.page.map((r) => r.n)).toEqual([7, 8, 9, 10, 11]);
  });

  it("need numItems as a whole number, and say what was given", async () => {
    for (const [numItems, given] of [
      ["5", '"5"'],
      [0, "0"],
      [2.5, "2.5"],
      [1001, "1001"],
    ] as const) {
      await expect(
        t.read(
          (d) =>
            d.items
              .withIndex("by_n", (q) => q.gte("n", 2))
              .paginate({ cursor: null, numItems: numItems as number }),
          context,
        ),
      ).rejects.toThrow(`paginate() needs numItems between 1 and 1000, got ${given}.`);
    }
  });

  it("leak no row values", async () => {
    const raw = Buffer.from(await firstCursor(), "base64url");
    expect(raw.includes(Buffer.from("hunter"))).toBe(false);
  });

  it("never reuse an IV for another position, across refills of the IV pool, and open only under their own binding", () => {
    const codec = new CursorCodec(randomBytes(32));
    const binding: CursorBinding = {
      deployment: "a",
      schemaHash: "s",
      handler: "list",
      argsHash: "h",
      table: "items",
      index: "by_n",
      start: "AA==",
      end: "/w==",
      order: "asc",
    };
    const positions = Array.from({ length: 1000 }, (_, i) => Buffer.from(`position ${i}`));
    // Positions too long to keep are sealed afresh each time: the same one gets a new IV too.
    const long = Buffer.alloc(600, 7);
    const cursors = [
      ...positions.map((position) => codec.encode(position, binding)),
      codec.encode(long, binding),
      codec.encode(long, binding),
    ];
    const ivs = new Set(
      cursors.map((cursor) => Buffer.from(cursor, "base64url").subarray(0, 12).toString("hex")),
    );
    expect(ivs.size).toBe(cursors.length);
    for (const [i, position] of positions.entries())
      expect(codec.decode(cursors[i] as string, binding)).toEqual(position);
    expect(codec.decode(cursors[1000] as string, binding)).toEqual(long);
    expect(() => codec.decode(cursors[0] as string, { ...binding, argsHash: "other" })).toThrow(
      /Invalid pagination cursor/,
    );
    // The same page end for the same query again: the cursor made for it before.
    const position = positions[999] as Buffer;
    expect(codec.encode(position, binding)).toBe(cursors[999]);
    expect(codec.encode(position, { ...binding, argsHash: "other" })).not.toBe(cursors[999]);
  });

  it("reject tampering", async () => {
    const cursor = await firstCursor();
    const bytes = Buffer.from(cursor, "base64url");
    for (const at of [0, 14, bytes.length - 1]) {
      const tampered = Buffer.from(bytes);
      tampered[at] = (tampered[at] as number) ^ 1;
      await expect(
        t.read(
          (d) =>
            d.items
              .withIndex("by_n", (q) => q.gte("n", 2))
              .paginate({ cursor: tampered.toString("base64url"), numItems: 5 }),
          context,
        ),
      ).rejects.toMatchObject({ code: "invalid_cursor" });
    }
    await expect(
      t.read(
        (d) => d.items.withIndex("by_n", (q) => q.gte("n", 2)).paginate({ cursor: "garbage", numItems: 5 }),
        context,
      ),
    ).rejects.toMatchObject({
      code: "invalid_cursor",
    });
  });

  it("are refused for any other query, arguments, handler, order, index, deployment or schema", async () => {
    const cursor = await firstCursor();
    const attempts: Array<() => Promise<unknown>> = [
      () =>
        t.read(
          (d) => d.items.withIndex("by_n", (q) => q.gte("n", 3)).paginate({ cursor, numItems: 5 }),
          context,
        ),
      () =>
        t.read(
          (d) =>
            d.items
              .withIndex("by_n", (q) => q.gte("n", 2))
              .order("desc")
              .paginate({ cursor, numItems: 5 }),
          context,
        ),
      () =>
        t.read((d) => d.items.withIndex("by_n", (q) => q.gte("n", 2)).paginate({ cursor, numItems: 5 }), {
          ...context,
          argsJson: '{"a":2}',
        }),
      () =>
        t.read((d) => d.items.withIndex("by_n", (q) => q.gte("n", 2)).paginate({ cursor, numItems: 5 }), {
          ...context,
          handler: "other",
        }),
      () => t.read((d) => d.items.withIndex("by_creation").paginate({ cursor, numItems: 5 }), context),
      () =>
        typedDb(other, app).read(
          (d) => d.items.withIndex("by_n", (q) => q.gte("n", 2)).paginate({ cursor, numItems: 5 }),
          context,
        ),
    ];
    for (const attempt of attempts) await expect(attempt()).rejects.toMatchObject({ code: "invalid_cursor" });
  });

  it("are refused after the schema changes", async () => {
    const cursor = await firstCursor();
    const changed = capsule({
      schema: {
        items: table({ n: number(), secret: string(), extra: string().optional() }).index("by_n", ["n"]),
      },
    });
    const scratch = await env.db.deployment("c");
    await scratch.migrate(app.declaration.schema);
    await deployment.migrate(changed.declaration.schema);
    await expect(
      t.read(
        (d) => d.items.withIndex("by_n", (q) => q.gte("n", 2)).paginate({ cursor, numItems: 5 }),
        context,
      ),
    ).rejects.toMatchObject({ code: "invalid_cursor" });
    await deployment.migrate(app.declaration.schema);
  });

  it("continue after a row whose index key cannot be rebuilt from its stored value", async () => {
    // Pages are scanned without keys and the last row's key is rebuilt from the row. An entry whose
    // value disagrees with its key (written here by hand) must still end its page at its real key.
    const scratch = await env.db.deployment("rebuilt");
    await scratch.migrate(app.declaration.schema);
    const s = typedDb(scratch, app);
    await s.write(async (d) => {
      for (let n = 0; n < 10; n++) await d.items.insert({ n, secret: `s${n}` });
    });
    const table = scratch.tables.get("items") as CompiledTable;
    const index = table.indexes.get("by_n") as CompiledIndex;
    const fourth = (await s.read((d) => d.items.withIndex("by_n", (q) => q.eq("n", 4)).first())).value;
    const json = JSON.stringify({ ...fourth, n: 400 });
    const key = indexEntryKey(index, materialize(table, parseStoredRow(JSON.stringify(fourth))));
    await env.db.store.batch([{ type: "put", key, value: json }]);
    const page = (cursor: string | null) =>
      s.read((d) => d.items.withIndex("by_n").paginate({ cursor, numItems: 5 }), context);
    const first = (await page(null)).value;
    expect(first.page.map((r) => r.n)).toEqual([0, 1, 2, 3, 400]);
    const second = (await page(first.continueCursor)).value;
    expect(second.page.map((r) => r.n)).toEqual([5, 6, 7, 8, 9]);
  });
});
