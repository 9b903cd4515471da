/**
 * The data browser's filter (dashboard/filter.ts) on fields named like members of
 * `Object.prototype`: a field without an equality must not find the inherited function, or the
 * range sends an `eq` without a value (which the host refuses) or fails to build at all.
 */
import { describe, expect, it } from "vitest";
import { eqOf, filterParams, rangeOf, readFilter, withEq } from "../dashboard/filter.js";
import type { TableInfo } from "../sdk/protocol/dashboard.js";

const table: TableInfo = {
  name: "things",
  fields: [
    { name: "constructor", kind: "string", optional: true },
    { name: "toString", kind: "number", optional: false },
    { name: "valueOf", kind: "number", optional: false },
    { name: "hasOwnProperty", kind: "boolean", optional: true },
  ],
  indexes: [
    { name: "by_creation", fields: [], counted: true },
    { name: "by_constructor", fields: ["constructor"], counted: false },
    { name: "by_pair", fields: ["toString", "valueOf"], counted: false },
    { name: "by_own", fields: ["hasOwnProperty"], counted: false },
  ],
  rows: { exact: 0 },
};

function rangeOfUrl(search: string) {
  return rangeOf(readFilter(new URLSearchParams(search), table), table);
}

describe("fields named like Object.prototype members", () => {
  it("an index on `constructor` without an equality sends no eq (the whole index)", () => {
    const range = rangeOfUrl("index=by_constructor");
    expect(range).toEqual([]);
    expect(JSON.stringify(range)).toBe("[]");
  });

  it("bounds apply to `constructor` when it has no equality", () => {
    expect(rangeOfUrl("index=by_constructor&gte.constructor=m&lt.constructor=t")).toEqual([
      { op: "gte", field: "constructor", value: "m" },
      { op: "lt", field: "constructor", value: "t" },
    ]);
  });

  it("an equality on `toString` then a bound on `valueOf` (which has no equality)", () => {
    expect(rangeOfUrl("index=by_pair&eq.toString=3&gt.valueOf=1")).toEqual([
      { op: "eq", field: "toString", value: 3 },
      { op: "gt", field: "valueOf", value: 1 },
    ]);
  });

  it("`hasOwnProperty` absent survives its URL, and without an equality puts none in it", () => {
    const filter = { index: "by_own", order: "desc" as const, eq: { hasOwnProperty: null } };
    const params = filterParams(filter, table.indexes[3]);
    expect(params.toString()).toBe("index=by_own&absent.hasOwnProperty=");
    expect(rangeOfUrl(params.toString())).toEqual([{ op: "eq", field: "hasOwnProperty", value: null }]);
    expect(filterParams({ ...filter, eq: {} }, table.indexes[3]).toString()).toBe("index=by_own");
  });

  it("eqOf reads own entries only, and withEq stores `__proto__` as an entry", () => {
    expect(eqOf({ eq: {} }, "constructor")).toBeUndefined();
    expect(eqOf({ eq: {} }, "toString")).toBeUndefined();
    const eq = withEq({}, "__proto__", "x");
    expect(eqOf({ eq }, "__proto__")).toBe("x");
    expect(Object.keys(eq)).toEqual(["__proto__"]);
    expect(withEq(eq, "__proto__", undefined)).toEqual({});
  });
});
