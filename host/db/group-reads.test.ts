import { describe, expect, it } from "vitest";
import { groupReadKeys } from "./group-reads.js";
import { rowKeyUnder, rowPrefix } from "./keys.js";
import { newRowId } from "./row-id.js";
import type { CompiledTable } from "./stored-schema.js";

const tables = new Map(
  ["lists", "items"].map((name) => [name, { rowPrefix: rowPrefix("d", name) } as CompiledTable]),
);
const rowKeys = (id: string) => [...tables.values()].map((table) => rowKeyUnder(table.rowPrefix, id));

describe("a group's reads ahead", () => {
  it("are the keys members name, then the row of each id in their arguments under every table", () => {
    const [a, b, c] = [newRowId(), newRowId(), newRowId()];
    const session = Buffer.from("session-key");
    const keys = groupReadKeys(tables, [
      { reads: [session], argsJson: JSON.stringify({ list: a, text: "not an id", nested: { ids: [b] } }) },
      { argsJson: JSON.stringify([c, 12, null, true]) },
      { argsJson: JSON.stringify({ list: a }) },
    ]);
    expect(keys[0]).toEqual(session);
    expect(new Set(keys.slice(1).map((key) => key.toString("hex")))).toEqual(
      new Set([a, b, c].flatMap(rowKeys).map((key) => key.toString("hex"))),
    );
    // Each key once, though two members name the same list.
    expect(keys).toHaveLength(1 + 3 * tables.size);
  });

  it("take nothing from arguments that are not JSON or are long, and stop at 256 keys and 64 values a member", () => {
    expect(groupReadKeys(tables, [{ argsJson: "{not json" }, { argsJson: "" }, {}])).toEqual([]);
    const many = Array.from({ length: 300 }, () => ({ argsJson: JSON.stringify({ id: newRowId() }) }));
    expect(groupReadKeys(tables, many)).toHaveLength(256);
    // A member's argument is walked only so far: its last ids are not looked at.
    const wide = JSON.stringify({ ids: Array.from({ length: 100 }, () => newRowId()) });
    expect(wide.length).toBeLessThan(4096);
    expect(groupReadKeys(tables, [{ argsJson: wide }]).length).toBeLessThan(64 * tables.size);
    // Under many tables, no key is made past the 256th (20,000 tables made 1.28 million for 64 ids).
    let made = 0;
    const manyTables = new Map(
      Array.from({ length: 20_000 }, (_, i) => {
        const prefix = rowPrefix("d", `t${i}`);
        const table = {
          get rowPrefix() {
            made++;
            return prefix;
          },
        } as CompiledTable;
        return [`t${i}`, table];
      }),
    );
    const ids = JSON.stringify(Array.from({ length: 64 }, () => newRowId()));
    expect(groupReadKeys(manyTables, [{ argsJson: ids }]).length).toBeLessThanOrEqual(256);
    expect(made).toBeLessThanOrEqual(256);
    // Long arguments are not parsed on the host's main thread at all.
    const long = JSON.stringify({ id: newRowId(), text: "x".repeat(5000) });
    expect(groupReadKeys(tables, [{ argsJson: long }])).toEqual([]);
  });
});
