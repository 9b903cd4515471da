import { describe, expect, it } from "vitest";
import { Budget, DEFAULT_BUDGET } from "../../host/db/budget.js";
import type { CallUsage } from "../../sdk/protocol/index.js";
import { classifyGrowth, judge, limitOfMessage, type Measurement, roughly } from "./analyze.js";
import { checkSizes, fillArgs } from "./scenario.js";
import { generateValue, seedOrder } from "./seed.js";

const usage = (rows: number, read = rows): CallUsage => ({
  rowsReturned: rows,
  rowsRead: read,
  bytesRead: rows * 100,
  rangesRead: 1,
  indexScans: 1,
  writes: 0,
  cpuMs: 1,
  wallMs: 2,
});
const ok = (size: number, rows: number, read = rows): Measurement => ({
  size,
  ok: true,
  usage: usage(rows, read),
});

describe("growth", () => {
  it("classifies by the two largest sizes", () => {
    const points = (values: number[]) => values.map((value, i) => ({ size: 10 ** (i + 2), value }));
    expect(classifyGrowth(points([10, 20, 20, 20]))).toBe("constant");
    expect(classifyGrowth(points([0, 0, 0]))).toBe("constant");
    expect(classifyGrowth(points([10, 100, 1000]))).toBe("linear");
    expect(classifyGrowth(points([1, 2, 4]))).toBe("sublinear");
    expect(classifyGrowth(points([1, 100, 10000]))).toBe("superlinear");
    expect(classifyGrowth(points([0, 0, 5]))).toBe("linear");
  });

  it("names the limit of the documented messages", () => {
    expect(limitOfMessage("collect() exceeded the 1000 row return limit. Use paginate().")).toBe(
      "rowsReturned",
    );
    expect(limitOfMessage("Database rowsRead limit exceeded (5000).")).toBe("rowsRead");
    expect(limitOfMessage("Database bytesRead limit exceeded (4194304).")).toBe("bytesRead");
    expect(limitOfMessage("Uncaught Error: nope")).toBeUndefined();
  });

  it("names the limits on gets and scans, in the words the database throws them", () => {
    const thrown = (limits: Partial<typeof DEFAULT_BUDGET>, bytes: number) => {
      const budget = new Budget({ ...DEFAULT_BUDGET, ...limits });
      try {
        for (let i = 0; i < 10; i++) budget.lookedUp(bytes);
      } catch (error) {
        return { message: (error as Error).message, rangesRead: budget.usage.rangesRead };
      }
      throw new Error("no limit was crossed");
    };
    const ranges = thrown({ rangesRead: 3 }, 10);
    expect(ranges).toEqual({ message: "Database rangesRead limit exceeded (3).", rangesRead: 3 });
    expect(limitOfMessage(ranges.message)).toBe("rangesRead");
    const bytes = thrown({ rangeBytesRead: 25 }, 10);
    expect(limitOfMessage(bytes.message)).toBe("rangeBytesRead");
  });

  it("flags the first size that crossed a limit, with advice", () => {
    const verdict = judge([
      ok(100, 100),
      ok(1000, 1000),
      {
        size: 2000,
        ok: false,
        usage: usage(0, 1001),
        code: "limit_exceeded",
        message: "collect() exceeded the 1000 row return limit. Use paginate().",
      },
    ]);
    expect(verdict.exceeds).toMatchObject({ budget: "rowsReturned", size: 2000 });
    expect(verdict.overall).toBe("linear");
    expect(verdict.advice).toContain("paginate()");
  });

  it("predicts where linear growth reaches a limit, never for bounded or slow growth", () => {
    expect(judge([ok(1000, 100), ok(6000, 600)]).predicted).toEqual({ budget: "rowsReturned", size: 10000 });
    expect(judge([ok(100, 10), ok(1000, 20), ok(6000, 20)]).predicted).toBeUndefined();
    expect(judge([ok(100, 1), ok(6000, 3)]).predicted).toBeUndefined();
    expect(roughly(12_345)).toBe(12_000);
  });

  it("predicts and flags the gets-and-scans limit, which no row count shows", () => {
    // A get per listed row (N+1): few rows returned per call, one range per row of the table.
    const lookups = (size: number): Measurement => ({
      size,
      ok: true,
      usage: { ...usage(10), rangesRead: size / 2 },
    });
    const verdict = judge([lookups(100), lookups(1000), lookups(2000)]);
    expect(verdict.growth).toMatchObject({ rowsReturned: "constant", rangesRead: "linear" });
    expect(verdict.predicted).toEqual({ budget: "rangesRead", size: 8200 });
    expect(verdict.advice).toContain("a get per row");
    const crossed = judge([
      ok(100, 1),
      {
        size: 1000,
        ok: false,
        usage: usage(0),
        code: "limit_exceeded",
        message: "Database rangeBytesRead limit exceeded (4194304).",
      },
    ]);
    expect(crossed.exceeds).toMatchObject({ budget: "rangeBytesRead", size: 1000 });
    expect(crossed.errors).toEqual([]);
    expect(crossed.advice).toContain("shorter keys");
  });

  it("keeps other failures apart from limits", () => {
    const verdict = judge([
      ok(100, 1),
      { size: 1000, ok: false, usage: usage(0), code: "handler_error", message: "Uncaught Error: bad" },
    ]);
    expect(verdict.exceeds).toBeUndefined();
    expect(verdict.errors).toEqual([{ size: 1000, code: "handler_error", message: "Uncaught Error: bad" }]);
  });
});

describe("scenario and seeding", () => {
  it("checks sizes", () => {
    expect(checkSizes([1, 10], "x")).toEqual([1, 10]);
    expect(() => checkSizes([10, 1], "x")).toThrow("increasing order");
    expect(() => checkSizes([0], "x")).toThrow("whole numbers");
    expect(() => checkSizes([], "x")).toThrow("whole numbers");
  });

  it("fills placeholders", () => {
    const context = { size: 5, user: "user:u", now: 7, idOf: (t: string) => (t === "a" ? "id1" : undefined) };
    expect(fillArgs({ n: "$size", u: ["$user"], t: "$now", id: "$id:a", s: "plain" }, context)).toEqual({
      n: 5,
      u: ["user:u"],
      t: 7,
      id: "id1",
      s: "plain",
    });
    expect(() => fillArgs("$id:b", context)).toThrow("No row of table b");
  });

  it("seeds id() targets first and refuses a cycle of required references", () => {
    const field = (table: string, optional = false) => ({ kind: "id" as const, table, optional });
    expect(
      seedOrder({
        tables: {
          items: { fields: { list: field("lists") }, indexes: {} },
          lists: { fields: {}, indexes: {} },
        },
      }),
    ).toEqual(["lists", "items"]);
    expect(() =>
      seedOrder({
        tables: {
          a: { fields: { b: field("b") }, indexes: {} },
          b: { fields: { a: field("a") }, indexes: {} },
        },
      }),
    ).toThrow(/cycle \(a -> b -> a\).*seed/);
    expect(generateValue("t", "f", { kind: "boolean", optional: false }, 3, ["x", "y"], () => [])).toBe("y");
    expect(generateValue("t", "f", { kind: "string", optional: true }, 3, null, () => [])).toBeUndefined();
  });
});
