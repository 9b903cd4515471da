/**
 * Stored counts (keys.ts "counts") on any backend: writes keep, per counted index, the number of
 * entries under the index's prefix and under each prefix of leading field values, so `count()`
 * over equalities reads one key. After random inserts, updates and deletes in concurrent mutations
 * (one group commit, each reading the writes of those before), the counts must match a brute-force
 * model, a count inside a mutation must see its own writes, and the stored count keys must equal a
 * tally from the stored rows, key for key.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { afterPrefix } from "../../host/db/codec.js";
import type { HostDatabase, TenantDatabase } from "../../host/db/index.js";
import { countKeyOf, indexPrefix, metaKey } from "../../host/db/keys.js";
import { collect } from "../../host/db/kv/index.js";
import { indexEntry, materialize, parseStoredRow } from "../../host/db/rows.js";
import {
  type CompiledIndex,
  type CompiledTable,
  compileSchema,
  type StoredSchema,
} from "../../host/db/stored-schema.js";
import type { RangeOp } from "../../sdk/protocol/index.js";
import type { FieldValue, SchemaSpec } from "../../sdk/values/index.js";
import { manyCountsCase } from "./many-counts.js";

/** A row of the suite's table as the model keeps it (an absent field is `undefined`). */
export type Row = Record<string, FieldValue | undefined>;

/** One table, a two-field index (counts for its prefix, `a`, and `a, b`) and a one-field one. */
export const SCHEMA: SchemaSpec = {
  tables: {
    t: {
      fields: {
        a: { kind: "string", optional: false },
        b: { kind: "number", optional: true },
        c: { kind: "boolean", optional: false },
      },
      indexes: { ab: ["a", "b"], c: ["c"] },
    },
  },
};

const rowArb: fc.Arbitrary<Row> = fc.record({
  a: fc.constantFrom("x", "y", "z"),
  b: fc.option(fc.constantFrom(1, 2, -0, 0.5), { nil: undefined }),
  c: fc.boolean(),
});

/** One write: insert a row, or update / delete the `at`-th live row (modulo how many there are). */
const opArb = fc.oneof(
  fc.record({ kind: fc.constant("insert" as const), row: rowArb }),
  fc.record({
    kind: fc.constant("update" as const),
    at: fc.nat(),
    patch: fc.record(
      {
        a: fc.constantFrom("x", "y"),
        b: fc.option(fc.constantFrom(1, 2), { nil: null }),
        c: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
);

/** Every stored count of `index`, by hex count key, read straight from the store. */
export async function storedCounts(
  deployment: TenantDatabase,
  storageId: string,
): Promise<Map<string, string>> {
  const prefix = countKeyOf(indexPrefix(deployment.id, "t", storageId));
  const entries = await collect(deployment.store.iterate({ gte: prefix, lt: afterPrefix(prefix) }));
  return new Map(entries.map(([key, value]) => [key.toString("hex"), value]));
}

/**
 * The counts the stored rows call for, tallied from scratch: each row's entry in the index adds to
 * every count key it has (rows.ts builds them). Compared with what the writes kept, key for key, so
 * a count left behind at zero or one moved twice shows up.
 */
async function countsFromRows(deployment: TenantDatabase, index: string): Promise<Map<string, string>> {
  const schema = compileSchema(deployment.id, await storedSchema(deployment));
  const table = schema.get("t") as CompiledTable;
  const compiled = table.indexes.get(index) as CompiledIndex;
  const rows = await collect(
    deployment.store.iterate({ gte: table.rowPrefix, lt: afterPrefix(table.rowPrefix) }),
  );
  const counts = new Map<string, number>();
  for (const [, json] of rows)
    for (const name of indexEntry(compiled, materialize(table, parseStoredRow(json))).counts) {
      const key = Buffer.from(name, "latin1").toString("hex");
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  return new Map([...counts].map(([key, n]) => [key, String(n)]));
}

/** The deployment's schema as stored (with each index's storage id and whether it is counted). */
export function storedSchema(deployment: TenantDatabase): Promise<StoredSchema> {
  return deployment.store.get(metaKey(deployment.id, "schema")).then((json) => JSON.parse(json as string));
}

/** Counts each equality prefix of `index` through the database and through a brute-force model. */
export async function checkCounts(deployment: TenantDatabase, model: Map<string, Row>): Promise<void> {
  const values = {
    a: ["x", "y", "z", "w"],
    b: [null, 1, 2, -0, 0.5, 7],
    c: [true, false],
  } as const;
  const probes: Array<{ index: string; range: RangeOp[] }> = [{ index: "ab", range: [] }];
  for (const a of values.a) {
    probes.push({ index: "ab", range: [{ op: "eq", field: "a", value: a }] });
    for (const b of values.b)
      probes.push({
        index: "ab",
        range: [
          { op: "eq", field: "a", value: a },
          { op: "eq", field: "b", value: b },
        ],
      });
  }
  for (const c of values.c) probes.push({ index: "c", range: [{ op: "eq", field: "c", value: c }] });
  const { value: counts } = await deployment.query(async (tx) => {
    const out: number[] = [];
    for (const { index, range } of probes) {
      const outcome = await tx.query({ table: "t", index, range, order: "asc" }, { kind: "count" });
      out.push(outcome.kind === "count" ? outcome.count : -1);
    }
    return out;
  });
  const expected = probes.map(({ range }) => {
    let n = 0;
    for (const row of model.values()) {
      // -0 and 0 are one value in an index (docs/capsules.md "Indexes"); `===` already treats them so.
      const matches = range.every(({ field, value }) =>
        value === null ? row[field] === undefined : row[field] === value,
      );
      if (matches) n++;
    }
    return n;
  });
  expect(counts).toEqual(expected);
}

/**
 * The random-writes property on a database from `open` (fresh for the suite; `dispose` closes and
 * removes it), `runs` cases, each on a deployment of its own.
 */
export function storedCountSuite(
  name: string,
  open: () => Promise<{ db: HostDatabase; dispose: () => Promise<void> }>,
  runs: number,
): void {
  describe(`${name}: stored counts`, () => {
    let run = 0;
    it("match a brute-force model after random inserts, updates and deletes in concurrent mutations, some failing", async () => {
      const { db, dispose } = await open();
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.array(
              fc.record({
                ops: fc.array(opArb, { minLength: 1, maxLength: 6 }),
                fails: fc.boolean(),
              }),
              { maxLength: 8 },
            ),
            async (groups) => {
              const deployment = await db.deployment(`counts${run++}`);
              await deployment.migrate(SCHEMA);
              let model = new Map<string, Row>();
              // Mutations queued together commit as one group, each reading the writes of those before;
              // one that throws after its writes leaves the counts as if it never ran.
              const settled = await Promise.allSettled(
                groups.map(({ ops, fails }) =>
                  deployment.mutate(async (tx) => {
                    const before = new Map([...model].map(([id, row]) => [id, { ...row }]));
                    for (const op of ops) {
                      const live = [...model.keys()];
                      if (op.kind === "insert") {
                        const id = await tx.insert("t", op.row);
                        model.set(id, { ...op.row });
                      } else if (live.length > 0) {
                        const id = live[op.at % live.length] as string;
                        if (op.kind === "delete") {
                          await tx.delete("t", id);
                          model.delete(id);
                        } else {
                          await tx.update("t", id, op.patch);
                          const row = model.get(id) as Row;
                          for (const [field, value] of Object.entries(op.patch))
                            row[field] = value === null ? undefined : value;
                        }
                      }
                    }
                    // A count inside the mutation sees its own writes.
                    const outcome = await tx.query(
                      {
                        table: "t",
                        index: "c",
                        range: [{ op: "eq", field: "c", value: true }],
                        order: "asc",
                      },
                      { kind: "count" },
                    );
                    const own = [...model.values()].filter((row) => row.c === true).length;
                    expect(outcome).toEqual({ kind: "count", count: own });
                    if (fails) {
                      model = before;
                      throw new Error("fails after its writes");
                    }
                  }),
                ),
              );
              for (const [i, outcome] of settled.entries())
                if (groups[i]?.fails)
                  expect(outcome).toMatchObject({
                    status: "rejected",
                    reason: { message: "fails after its writes" },
                  });
                else if (outcome.status === "rejected") throw outcome.reason;
              await checkCounts(deployment, model);
              const indexes = (await storedSchema(deployment)).tables.t!.indexes;
              for (const name of ["ab", "c", "by_creation"])
                expect(await storedCounts(deployment, indexes[name]!.storageId)).toEqual(
                  await countsFromRows(deployment, name),
                );
            },
          ),
          { numRuns: runs },
        );
      } finally {
        await dispose();
      }
    }, 120_000);

    it("stay exact when one mutation starts its writes without awaiting each", async () => {
      const { db, dispose } = await open();
      try {
        const deployment = await db.deployment("unawaited");
        await deployment.migrate(SCHEMA);
        const { value: ids } = await deployment.mutate((tx) =>
          Promise.all(Array.from({ length: 20 }, (_, i) => tx.insert("t", { a: "x", b: i % 2, c: true }))),
        );
        const model = new Map<string, Row>(ids.map((id, i) => [id, { a: "x", b: i % 2, c: true }]));
        // Five updates of one row and three deletes, all started at once.
        const target = ids[0] as string;
        await deployment.mutate(async (tx) => {
          await Promise.all([
            ...[2, 3, 4, 5, 6].map((b) => tx.update("t", target, { b })),
            ...ids.slice(1, 4).map((id) => tx.delete("t", id)),
          ]);
        });
        (model.get(target) as Row).b = 6;
        for (const id of ids.slice(1, 4)) model.delete(id);
        // A mutation that returns before its last write has finished (it never awaits it).
        await deployment.mutate(async (tx) => {
          void tx.update("t", ids[4] as string, { a: "y" });
        });
        (model.get(ids[4] as string) as Row).a = "y";
        await checkCounts(deployment, model);
        const indexes = (await storedSchema(deployment)).tables.t!.indexes;
        for (const name of ["ab", "c", "by_creation"])
          expect(await storedCounts(deployment, indexes[name]!.storageId)).toEqual(
            await countsFromRows(deployment, name),
          );
        // One entry per row in every index: the updates did not leave the row under an old value.
        const { value: entries } = await deployment.query(async (tx) => {
          const outcome = await tx.query(
            { table: "t", index: "ab", range: [], order: "asc" },
            { kind: "collect" },
          );
          return outcome.kind === "rows" ? outcome.rows.length : -1;
        });
        expect(entries).toBe(model.size);
      } finally {
        await dispose();
      }
    });

    manyCountsCase(open);
  });
}
