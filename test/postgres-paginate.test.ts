/**
 * Pagination on the PostgreSQL backend, where a page's scan brings its keys (the cursor is the key
 * the page ended at), against the same rows read whole; each page one message. Against a real
 * PostgreSQL server on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostDatabase, PostgresKv, type TenantDatabase } from "../host/db/index.js";
import { capsule, number, string, table } from "../sdk/server/index.js";
import { typedDb } from "./helpers/db.js";
import { freshTable, postgresForThisFile, postgresInstalled, recordQueries } from "./helpers/postgres.js";

const server = postgresForThisFile("PostgreSQL pagination tests");

const app = capsule({
  schema: { items: table({ n: number(), text: string() }).index("by_n", ["n"]) },
});

const ROWS = 57;

describe.skipIf(!postgresInstalled)("pagination on PostgreSQL", () => {
  let db: HostDatabase;
  let deployment: TenantDatabase;
  let t: ReturnType<typeof typedDb<typeof app.definition.schema>>;

  beforeAll(async () => {
    db = await HostDatabase.openStore(await PostgresKv.open(server.url, { table: freshTable() }));
    deployment = await db.deployment("pages");
    await deployment.migrate(app.declaration.schema);
    t = typedDb(deployment, app);
    await t.write(async (d) => {
      // Some values repeat, so rows tie on `n` and order by creation, then id.
      for (let i = 0; i < ROWS; i++)
        await d.items.insert({ n: i % 19, text: `row ${i}: it's "quoted" \\ \n $1` });
    });
  });
  afterAll(() => db?.close());

  const context = { handler: "page", argsJson: "{}" };

  for (const order of ["asc", "desc"] as const)
    for (const numItems of [1, 2, 5, 20, 56, 57, 58])
      it(`walks every row once, in index order, ${order}, ${numItems} a page`, async () => {
        const whole = (await t.read((d) => d.items.withIndex("by_n").order(order).collect(), context)).value;
        expect(whole).toHaveLength(ROWS);
        const seen: unknown[] = [];
        let cursor: string | null = null;
        for (let pages = 0; pages <= ROWS + 1; pages++) {
          const { page, isDone, continueCursor } = (
            await t.read(
              (d) => d.items.withIndex("by_n").order(order).paginate({ cursor, numItems }),
              context,
            )
          ).value;
          expect(page.length).toBeLessThanOrEqual(numItems);
          seen.push(...page);
          cursor = continueCursor;
          if (isDone) break;
        }
        expect(seen).toEqual(whole);
      });

  it("reads a page in one message: no second read for the cursor's key", async () => {
    const { queries, stop } = recordQueries();
    try {
      const first = await t.read(
        (d) => d.items.withIndex("by_n", (q) => q.gte("n", 3)).paginate({ cursor: null, numItems: 7 }),
        context,
      );
      const next = await t.read(
        (d) =>
          d.items
            .withIndex("by_n", (q) => q.gte("n", 3))
            .paginate({ cursor: first.value.continueCursor, numItems: 7 }),
        context,
      );
      expect(first.value.page.map((row) => row.n)).toEqual([3, 3, 3, 4, 4, 4, 5]);
      expect(next.value.page.map((row) => row.n)).toEqual([5, 5, 6, 6, 6, 7, 7]);
      // Each page is one message: its BEGIN and its scan.
      expect(queries.filter(({ text }) => text.includes("BEGIN ISOLATION LEVEL"))).toHaveLength(2);
      expect(queries).toHaveLength(2);
    } finally {
      stop();
    }
  });
});
