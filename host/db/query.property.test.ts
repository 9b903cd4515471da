/**
 * Property test: random schemas, rows, index ranges and orders, checked against a brute-force model
 * of docs/capsules.md "Indexes": absent first, false < true, strings by UTF-8 bytes, numbers by value with
 * -0 == 0, then createdAt, then id. Pagination over a whole range returns every row exactly once.
 */
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { RangeOp } from "../../sdk/protocol/index.js";
import type { FieldKind, FieldSpec, FieldValue, SchemaSpec } from "../../sdk/values/index.js";
import { tempDatabase } from "../../test/helpers/db.js";
import type { HostDatabase } from "./index.js";

type Row = { id: string; createdAt: number } & Record<string, FieldValue>;

const KINDS: FieldKind[] = ["string", "boolean", "number", "userId"];
const EDGE_STRINGS = [
  "",
  "a",
  "ab",
  "B",
  "é",
  "e\u0301",
  "\u007f",
  "\u0080",
  "\uffff",
  "😀",
  "\ud83d\ude00x",
  "中文",
];
const EDGE_NUMBERS = [
  -0,
  0,
  1,
  -1,
  2,
  -2,
  10,
  -10,
  0.5,
  -0.5,
  1e300,
  -1e300,
  5e-324,
  Number.MAX_SAFE_INTEGER,
];

function valueArb(kind: FieldKind): fc.Arbitrary<FieldValue> {
  switch (kind) {
    case "boolean":
      return fc.boolean();
    case "number":
      return fc.oneof(
        fc.constantFrom(...EDGE_NUMBERS),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.integer({ min: -3, max: 3 }),
      );
    default: {
      const text = fc.oneof(
        fc.constantFrom(...EDGE_STRINGS),
        fc.string({ unit: "grapheme", maxLength: 4 }).filter((s) => !s.includes("\u0000")),
      );
      return kind === "userId" ? text.filter((s) => s.length > 0) : text;
    }
  }
}

const fieldArb = fc.record({ kind: fc.constantFrom(...KINDS), optional: fc.boolean() });

const scenarioArb = fc.array(fieldArb, { minLength: 1, maxLength: 4 }).chain((fields) => {
  const names = fields.map((_, i) => `f${i}`);
  const rowArb = fc.record(
    Object.fromEntries(
      fields.map((f, i) => [
        names[i],
        f.optional ? fc.option(valueArb(f.kind), { nil: undefined, freq: 3 }) : valueArb(f.kind),
      ]),
    ),
  ) as fc.Arbitrary<Record<string, FieldValue | undefined>>;
  return fc.record({
    fields: fc.constant(fields),
    index: fc.shuffledSubarray(names, { minLength: 1, maxLength: Math.min(3, names.length) }),
    rows: fc.array(rowArb, { maxLength: 40 }),
    order: fc.constantFrom("asc" as const, "desc" as const),
    eqCount: fc.nat(3),
    lower: fc.option(fc.constantFrom("gt" as const, "gte" as const), { nil: undefined }),
    upper: fc.option(fc.constantFrom("lt" as const, "lte" as const), { nil: undefined }),
    picks: fc.array(fc.nat(1000), { minLength: 6, maxLength: 6 }),
    take: fc.nat(45),
    pageSize: fc.integer({ min: 1, max: 7 }),
  });
});

function compareValues(kind: FieldKind, a: FieldValue | undefined, b: FieldValue | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1;
  if (kind === "number") return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
  if (kind === "boolean") return Number(a) - Number(b);
  return Math.sign(Buffer.compare(Buffer.from(a as string), Buffer.from(b as string)));
}

let env: Awaited<ReturnType<typeof tempDatabase>>;
let db: HostDatabase;
let run = 0;

beforeAll(async () => {
  env = await tempDatabase();
  db = env.db;
});
afterAll(() => env.dispose());

it("matches a brute-force model for collect, take, first, count and paginate", async () => {
  await fc.assert(
    fc.asyncProperty(scenarioArb, async (s) => {
      const kinds: Record<string, FieldKind> = {};
      const fields: Record<string, FieldSpec> = {};
      s.fields.forEach((f, i) => {
        kinds[`f${i}`] = f.kind;
        fields[`f${i}`] = { kind: f.kind, optional: f.optional };
      });
      const schema: SchemaSpec = { tables: { t: { fields, indexes: { idx: s.index } } } };
      const deployment = await db.deployment(`prop${run++}`);
      await deployment.migrate(schema);
      const { value: ids } = await deployment.mutate(async (tx) => {
        const out: string[] = [];
        for (const row of s.rows) out.push(await tx.insert("t", row));
        return out;
      });
      const { value: stored } = await deployment.query(async (tx) => {
        const result = await tx.query(
          { table: "t", index: "by_creation", range: [], order: "asc" },
          { kind: "take", n: 1000 },
        );
        return result.kind === "rows" ? result.rows.map((r) => JSON.parse(r) as Row) : [];
      });
      expect(stored.map((r) => r.id)).toEqual(ids);

      // Build a range from values that exist (so equalities match something) or fresh ones.
      const fieldOf = (i: number) => s.index[i] as string;
      const pick = (i: number, field: string): FieldValue | null => {
        const source = stored[(s.picks[i] as number) % Math.max(stored.length, 1)];
        const value = source?.[field];
        if (value !== undefined) return value;
        if (fields[field]?.optional && i < 4) return null;
        const fallback: Record<FieldKind, FieldValue> = {
          string: "a",
          userId: "u",
          boolean: true,
          number: EDGE_NUMBERS[i] as number,
          id: "",
        };
        return fallback[kinds[field] as FieldKind];
      };
      const eqCount = Math.min(s.eqCount, s.index.length);
      const range: RangeOp[] = [];
      for (let i = 0; i < eqCount; i++)
        range.push({ op: "eq", field: fieldOf(i), value: pick(i, fieldOf(i)) });
      const next = s.index[eqCount];
      if (next) {
        const typeOk = (v: FieldValue | null) => v !== null;
        const lo = pick(4, next);
        const hi = pick(5, next);
        if (s.lower && typeOk(lo)) range.push({ op: s.lower, field: next, value: lo });
        if (s.upper && typeOk(hi)) range.push({ op: s.upper, field: next, value: hi });
      }

      // The model.
      const matches = (row: Row) =>
        range.every((op) => {
          const v = row[op.field];
          if (op.value === null) return v === undefined;
          if (v === undefined) return false;
          const c = compareValues(kinds[op.field] as FieldKind, v, op.value);
          return op.op === "eq"
            ? c === 0
            : op.op === "gt"
              ? c > 0
              : op.op === "gte"
                ? c >= 0
                : op.op === "lt"
                  ? c < 0
                  : c <= 0;
        });
      const expected = stored.filter(matches).sort((a, b) => {
        for (const field of s.index) {
          const c = compareValues(kinds[field] as FieldKind, a[field], b[field]);
          if (c !== 0) return c;
        }
        return a.createdAt - b.createdAt || Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
      });
      if (s.order === "desc") expected.reverse();
      const expectedIds = expected.map((r) => r.id);

      const spec = { table: "t", index: "idx", range, order: s.order };
      const { value: got } = await deployment.query(async (tx) => {
        const ids = (o: Awaited<ReturnType<typeof tx.query>>) =>
          o.kind === "rows" ? o.rows.map((r) => (JSON.parse(r) as Row).id) : [];
        const first = await tx.query(spec, { kind: "first" });
        return {
          collect: ids(await tx.query(spec, { kind: "collect" })),
          take: ids(await tx.query(spec, { kind: "take", n: s.take })),
          first: first.kind === "row" && first.row ? (JSON.parse(first.row) as Row).id : null,
          count: (await tx.query(spec, { kind: "count" })) as { count: number },
        };
      });
      expect(got.collect).toEqual(expectedIds);
      expect(got.take).toEqual(expectedIds.slice(0, s.take));
      expect(got.first).toEqual(expectedIds[0] ?? null);
      expect(got.count.count).toBe(expectedIds.length);

      const paged: string[] = [];
      let cursor: string | null = null;
      for (let guard = 0; guard < 100; guard++) {
        const { value: page } = await deployment.query(
          (tx) => tx.query(spec, { kind: "paginate", cursor, numItems: s.pageSize }),
          { handler: "h", argsJson: "{}" },
        );
        if (page.kind !== "page") throw new Error("expected a page");
        paged.push(...page.page.map((r) => (JSON.parse(r) as Row).id));
        cursor = page.continueCursor;
        if (page.isDone) break;
      }
      expect(paged).toEqual(expectedIds);
    }),
    { numRuns: 150 },
  );
});
