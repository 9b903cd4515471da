import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { QuerySpec, QueryTerminal } from "../../sdk/protocol/index.js";
import { capsule, number, string, table } from "../../sdk/server/index.js";
import { tempDatabase, typedDb } from "../../test/helpers/db.js";
import { DEFAULT_BUDGET, isPending, runQuery, type TenantDatabase, type Transaction } from "./index.js";

/**
 * Query terminals answered from the embedded store's scan memo (kv/scan-memo.ts), at once, against
 * the same terminals scanning: same answer, same budgets, same read set; never another
 * deployment's rows; never past the transaction's own writes.
 */
const app = capsule({
  schema: { items: table({ n: number(), group: string() }).index("by_group", ["group"]) },
});

let env: Awaited<ReturnType<typeof tempDatabase>>;
let a: TenantDatabase;
let b: TenantDatabase;

beforeAll(async () => {
  env = await tempDatabase();
  a = await env.db.deployment("memo-a");
  b = await env.db.deployment("memo-b");
  for (const [deployment, offset] of [
    [a, 0],
    [b, 1000],
  ] as const) {
    await deployment.migrate(app.declaration.schema);
    await typedDb(deployment, app).write(async (d) => {
      for (let i = 0; i < 30; i++) await d.items.insert({ n: offset + i, group: i % 3 === 0 ? "x" : "y" });
    });
  }
});
afterAll(() => env.dispose());

const byGroup = (group: string, order: "asc" | "desc" = "asc"): QuerySpec => ({
  table: "items",
  index: "by_group",
  range: [{ op: "eq", field: "group", value: group }],
  order,
});

const TERMINALS: Array<[string, QuerySpec, QueryTerminal]> = [
  ["take", byGroup("y", "desc"), { kind: "take", n: 5 }],
  ["first", byGroup("x"), { kind: "first" }],
  ["collect", byGroup("x"), { kind: "collect" }],
  ["paginate", byGroup("y"), { kind: "paginate", cursor: null, numItems: 7 }],
  [
    "count over a range no stored count answers",
    { table: "items", index: "by_group", range: [{ op: "gte", field: "group", value: "x" }], order: "asc" },
    { kind: "count" },
  ],
];

/** Runs `spec`/`terminal` in a read transaction of its own; whether the answer came at once. */
async function once(deployment: TenantDatabase, spec: QuerySpec, terminal: QueryTerminal) {
  let atOnce = false;
  const result = await deployment.query((tx: Transaction) => {
    const outcome = runQuery(tx, spec, terminal);
    atOnce = !isPending(outcome);
    return outcome;
  });
  return { atOnce, value: result.value, usage: result.usage, readSet: result.readSet };
}

describe("query terminals answered from the scan memo", () => {
  for (const [name, spec, terminal] of TERMINALS) {
    it(`${name}: a second reader between the same two writes is answered at once, exactly as the first`, async () => {
      // A write elsewhere first: both readers below share the view taken after it, and no test
      // before scanned this range.
      await typedDb(a, app).write((d) => d.items.insert({ n: -1, group: "z" }));
      const scanned = await once(a, spec, terminal);
      const kept = await once(a, spec, terminal);
      expect(scanned.atOnce).toBe(false);
      expect(kept.atOnce).toBe(true);
      expect(kept.value).toEqual(scanned.value);
      expect(kept.usage).toEqual(scanned.usage);
      expect(kept.readSet).toEqual(scanned.readSet);
    });
  }

  it("answers a count that a stored count answers at once, the first time too", async () => {
    await typedDb(a, app).write((d) => d.items.insert({ n: -5, group: "z" }));
    const counted = await once(a, byGroup("y"), { kind: "count" });
    expect(counted.atOnce).toBe(true);
    expect(counted.value).toEqual({ kind: "count", count: 20 });
  });

  it("answers a deployment only from its own scans, for the same table, index and values", async () => {
    await typedDb(a, app).write((d) => d.items.insert({ n: -2, group: "z" }));
    const spec = byGroup("x");
    const fromA = await once(a, spec, { kind: "collect" });
    const fromB = await once(b, spec, { kind: "collect" });
    expect(fromB.atOnce).toBe(false);
    const ns = (value: unknown) =>
      ((value as { rows: string[] }).rows.map((row) => JSON.parse(row).n) as number[]).sort((x, y) => x - y);
    expect(ns(fromA.value).every((n) => n < 1000)).toBe(true);
    expect(ns(fromB.value).every((n) => n >= 1000)).toBe(true);
  });

  it("sees what a write committed since the scan it would otherwise reuse", async () => {
    const spec = byGroup("w");
    const empty = await once(a, spec, { kind: "collect" });
    expect(empty.value).toEqual({ kind: "rows", rows: [] });
    await typedDb(a, app).write((d) => d.items.insert({ n: 7, group: "w" }));
    const after = await once(a, spec, { kind: "collect" });
    expect(after.atOnce).toBe(false);
    expect((after.value as { rows: string[] }).rows.map((row) => JSON.parse(row).n)).toEqual([7]);
  });

  it("reads a mutation's own writes in the range, never a scan made without them", async () => {
    await typedDb(a, app).write((d) => d.items.insert({ n: -3, group: "z" }));
    const spec = byGroup("v");
    await once(a, spec, { kind: "collect" });
    const result = await a.mutate(async (tx: Transaction) => {
      await tx.insert("items", { n: 8, group: "v" });
      const outcome = runQuery(tx, spec, { kind: "collect" });
      return { atOnce: !isPending(outcome), outcome: await outcome };
    });
    expect(result.value.atOnce).toBe(false);
    const rows = (result.value.outcome as { rows: string[] }).rows;
    expect(rows.map((row) => JSON.parse(row).n)).toEqual([8]);
  });

  it("charges the budgets of an answer from the memo, and fails past them as a scan does", async () => {
    await typedDb(a, app).write((d) => d.items.insert({ n: -4, group: "z" }));
    const spec = byGroup("y");
    await once(a, spec, { kind: "collect" });
    const tight = { budget: Object.assign({}, DEFAULT_BUDGET, { rowsRead: 5 }) };
    await expect(
      a.query((tx: Transaction) => runQuery(tx, spec, { kind: "collect" }), tight),
    ).rejects.toMatchObject({ code: "limit_exceeded", message: "Database rowsRead limit exceeded (5)." });
  });
});
