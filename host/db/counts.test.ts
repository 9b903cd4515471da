/**
 * Stored counts on classic-level: the shared random-writes suite (test/helpers/count-suite.ts, which
 * PostgreSQL runs too), then what only one backend needs to show: a migration rebuilds the indexes
 * of a deployment stored before counts existed (which count by walking until then) and a dropped
 * index takes its counts with it; ranges counts do not cover are walked.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RangeOp } from "../../sdk/protocol/index.js";
import type { SchemaSpec } from "../../sdk/values/index.js";
import {
  checkCounts,
  type Row,
  SCHEMA,
  storedCountSuite,
  storedCounts,
  storedSchema,
} from "../../test/helpers/count-suite.js";
import { tempDatabase } from "../../test/helpers/db.js";
import { afterPrefix } from "./codec.js";
import { HostDatabase } from "./index.js";
import { countKeyOf, indexPrefix, metaKey } from "./keys.js";
import { collect } from "./kv/index.js";

storedCountSuite("classic-level", tempDatabase, 60);

let env: Awaited<ReturnType<typeof tempDatabase>>;
let db: HostDatabase;

beforeEach(async () => {
  env = await tempDatabase();
  db = env.db;
});
afterEach(async () => {
  await db.close().catch(() => {});
  await env.dispose();
});

describe("stored counts", () => {
  it("are rebuilt from the entries by a migration, and dropped with their index", async () => {
    const deployment = await db.deployment("rebuild");
    await deployment.migrate(SCHEMA);
    const model = new Map<string, Row>();
    await deployment.mutate(async (tx) => {
      for (let i = 0; i < 30; i++) {
        const row = { a: ["x", "y"][i % 2], b: i % 3 === 0 ? undefined : i % 3, c: i % 5 === 0 };
        model.set(await tx.insert("t", row), row);
      }
    });
    // A deployment stored before counts existed: its indexes are not marked counted, no counts.
    const old = await storedSchema(deployment);
    const before = old.tables.t!.indexes.ab!;
    for (const index of Object.values(old.tables.t!.indexes)) delete index.counted;
    await deployment.store.batch([
      { type: "put", key: metaKey(deployment.id, "schema"), value: JSON.stringify(old) },
    ]);
    const countRange = countKeyOf(indexPrefix(deployment.id, "t", before.storageId));
    await deployment.store.clear({ gte: countRange, lt: afterPrefix(countRange) });
    await db.close();
    db = await HostDatabase.open(env.dir);
    const reopened = await db.deployment("rebuild");
    expect(Object.values((await storedSchema(reopened)).tables.t!.indexes).some((i) => i.counted)).toBe(
      false,
    );
    // Without counts, count() walks the entries: still exact.
    await checkCounts(reopened, model);

    // The next migration (even of the same schema) rebuilds each index once, with its counts.
    const report = await reopened.migrate(SCHEMA);
    expect(report.built.map((b) => b.index).sort()).toEqual(["ab", "by_creation", "c"]);
    const rebuilt = (await storedSchema(reopened)).tables.t!.indexes.ab!;
    expect(rebuilt.counted).toBe(true);
    expect(rebuilt.storageId).not.toBe(before.storageId);
    expect((await storedCounts(reopened, rebuilt.storageId)).size).toBeGreaterThan(0);
    await checkCounts(reopened, model);
    expect((await reopened.migrate(SCHEMA)).built).toEqual([]);

    // Dropping the index deletes its counts with its entries.
    const dropped: SchemaSpec = { tables: { t: { ...SCHEMA.tables.t!, indexes: { c: ["c"] } } } };
    await reopened.migrate(dropped);
    expect((await storedCounts(reopened, rebuilt.storageId)).size).toBe(0);
  });

  it("leave ranges they do not cover to a walk: bounds, and equalities on createdAt", async () => {
    const deployment = await db.deployment("walks");
    await deployment.migrate(SCHEMA);
    const { value: created } = await deployment.mutate(async (tx) => {
      for (let i = 0; i < 10; i++) await tx.insert("t", { a: "x", b: i, c: true });
      const outcome = await tx.query(
        { table: "t", index: "by_creation", range: [], order: "asc" },
        { kind: "take", n: 1 },
      );
      return outcome.kind === "rows"
        ? (JSON.parse(outcome.rows[0] as string) as { createdAt: number })
        : null;
    });
    const { value } = await deployment.query(async (tx) => {
      const count = async (index: string, range: RangeOp[]) => {
        const outcome = await tx.query({ table: "t", index, range, order: "asc" }, { kind: "count" });
        return outcome.kind === "count" ? outcome.count : -1;
      };
      return {
        bounded: await count("ab", [
          { op: "eq", field: "a", value: "x" },
          { op: "gte", field: "b", value: 3 },
          { op: "lt", field: "b", value: 7 },
        ]),
        createdAt: await count("by_creation", [{ op: "eq", field: "createdAt", value: created!.createdAt }]),
        wholeTable: await count("by_creation", []),
      };
    });
    expect(value).toEqual({ bounded: 4, createdAt: 1, wholeTable: 10 });
  });

  it("go with their deployment: deleting it leaves no key of it, counts included", async () => {
    const deployment = await db.deployment("doomed");
    await deployment.migrate(SCHEMA);
    await deployment.mutate(async (tx) => {
      for (let i = 0; i < 5; i++) await tx.insert("t", { a: "x", b: i, c: true });
    });
    const countsOf = countKeyOf(
      indexPrefix("doomed", "t", (await storedSchema(deployment)).tables.t!.indexes.c!.storageId),
    );
    const keysOfDeployment = async () => {
      const all = await collect(db.store.iterate({ gte: Buffer.alloc(0), lt: Buffer.from([0xff]) }));
      return all.filter(([key]) => key.includes(Buffer.from("doomed")));
    };
    // c = true: one count.
    expect((await collect(db.store.iterate({ gte: countsOf, lt: afterPrefix(countsOf) }))).length).toBe(1);
    await db.dropDeployment("doomed");
    expect(await keysOfDeployment()).toEqual([]);
  });
});
