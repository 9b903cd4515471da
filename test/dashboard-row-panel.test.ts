/**
 * The row panel's logic (dashboard/row-json.ts): the panel shows only the selected row's data
 * (a load keeps its previous answer, another row's, until the new one comes), and an edit's patch
 * clears an optional field the editor removed even when its name is an `Object.prototype` member.
 */
import { describe, expect, it } from "vitest";
import { editableJson, ownValue, patchOf, type Row, rowOfSelection } from "../dashboard/row-json.js";
import type { TableInfo } from "../sdk/protocol/dashboard.js";

const table: TableInfo = {
  name: "things",
  fields: [
    { name: "title", kind: "string", optional: false },
    { name: "constructor", kind: "string", optional: true },
    { name: "toString", kind: "number", optional: true },
    { name: "valueOf", kind: "boolean", optional: true },
    { name: "hasOwnProperty", kind: "string", optional: true },
  ],
  indexes: [{ name: "by_creation", fields: [], counted: true }],
  rows: { exact: 2 },
};

const rowA: Row = { id: "A", createdAt: 1, title: "a" };
const rowB: Row = { id: "B", createdAt: 2, title: "b" };

describe("which row the panel shows", () => {
  it("never the previous row's answer while the selected one loads", () => {
    expect(rowOfSelection("B", rowA)).toBeUndefined();
    expect(rowOfSelection("B", rowB)).toBe(rowB);
    expect(rowOfSelection(null, rowA)).toBeUndefined();
    expect(rowOfSelection("B", undefined)).toBeUndefined();
  });
});

describe("fields named like Object.prototype members", () => {
  it("removing each of them from the editor clears it", () => {
    const before: Row = {
      ...rowA,
      constructor: "c",
      toString: 3,
      valueOf: true,
      hasOwnProperty: "h",
    };
    expect(patchOf(before, { title: "a" }, table)).toEqual({
      constructor: null,
      toString: null,
      valueOf: null,
      hasOwnProperty: null,
    });
  });

  it("setting one the row lacks sends it; leaving it out sends nothing", () => {
    expect(patchOf(rowA, { title: "a", constructor: "c", toString: 1 }, table)).toEqual({
      constructor: "c",
      toString: 1,
    });
    expect(patchOf(rowA, { title: "a2" }, table)).toEqual({ title: "a2" });
  });

  it("a row without them shows none of them in the editor or its cells", () => {
    expect(JSON.parse(editableJson(table, rowA))).toEqual({ title: "a" });
    expect(ownValue(rowA, "constructor")).toBeUndefined();
    expect(ownValue(rowA, "toString")).toBeUndefined();
  });

  it("an unknown `__proto__` key typed in the editor is sent, not swallowed", () => {
    const patch = patchOf(rowA, JSON.parse('{"title":"a","__proto__":{"x":1}}'), table);
    expect(JSON.stringify(patch)).toBe('{"__proto__":{"x":1}}');
  });
});
