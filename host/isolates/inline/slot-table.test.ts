import { describe, expect, it } from "vitest";
import { SlotTable } from "./slot-table.js";

/** The table's entries, in slot order, as [key, value] pairs sorted by key. */
function entriesOf<T>(table: SlotTable<T>): Array<[number, T]> {
  const entries: Array<[number, T]> = [];
  table.forEach((value, key) => {
    entries.push([key, value]);
  });
  return entries.sort(([a], [b]) => a - b);
}

describe("SlotTable", () => {
  it("stores, replaces, finds and removes entries by key, counting them", () => {
    const table = new SlotTable<string>();
    table.set(1, "a");
    table.set(2, "b");
    table.set(2, "b2");
    expect(table.size).toBe(2);
    expect(table.get(1)).toBe("a");
    expect(table.get(2)).toBe("b2");
    expect(table.get(3)).toBeUndefined();
    expect(table.delete(1)).toBe(true);
    expect(table.delete(1)).toBe(false);
    expect(table.get(1)).toBeUndefined();
    expect(table.size).toBe(1);
  });

  it("never confuses two keys that share a slot: it grows and keeps both", () => {
    const table = new SlotTable<number>();
    // A request that stays in flight while many newer ones come and go (16 is the first capacity).
    table.set(1, 1);
    for (let key = 2; key <= 1000; key++) {
      table.set(key, key);
      expect(table.get(1)).toBe(1);
      if (key > 2) table.delete(key - 1);
    }
    expect(entriesOf(table)).toEqual([
      [1, 1],
      [1000, 1000],
    ]);
    expect(table.get(17)).toBeUndefined();
    expect(table.get(1 + 1024)).toBeUndefined();
  });

  it("answers undefined for keys no one stored, whatever their type or size", () => {
    const table = new SlotTable<string>();
    table.set(5, "x");
    for (const forged of [0, -5, 5.5, 5 + 16, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60])
      expect(table.get(forged)).toBeUndefined();
    expect(table.delete(21)).toBe(false);
    expect(table.get(5)).toBe("x");
  });

  it("refuses keys that are not positive safe integers", () => {
    const table = new SlotTable<string>();
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 53])
      expect(() => table.set(bad, "x")).toThrow(/positive integer/);
    expect(table.size).toBe(0);
  });

  it("keeps working with keys far past 2^32 (a long-running host's request counter)", () => {
    const table = new SlotTable<string>();
    const base = 2 ** 40;
    for (let key = base; key < base + 100; key++) table.set(key, String(key));
    for (let key = base; key < base + 100; key += 2) table.delete(key);
    expect(table.size).toBe(50);
    expect(table.get(base + 1)).toBe(String(base + 1));
    expect(table.get(base)).toBeUndefined();
  });

  it("lets a visit delete entries, its own and others, and visits each remaining entry once", () => {
    const table = new SlotTable<number>();
    for (let key = 1; key <= 40; key++) table.set(key, key);
    const visited: number[] = [];
    table.forEach((value, key) => {
      visited.push(value);
      table.delete(key);
      if (key % 2 === 1) table.delete(key + 1);
    });
    expect(visited.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i * 2 + 1));
    expect(table.size).toBe(0);
  });

  it("starts small again once empty, so one stuck entry does not leave it large", () => {
    const table = new SlotTable<number>();
    table.set(1, 1);
    table.set(1 + 4096, 2);
    expect(table.capacity).toBeGreaterThan(4096);
    table.delete(1);
    table.delete(1 + 4096);
    table.set(3, 3);
    expect(entriesOf(table)).toEqual([[3, 3]]);
    expect(table.capacity).toBe(16);
  });

  it("keeps a modest size when it empties, so a busy deployment does not regrow it between bursts", () => {
    const table = new SlotTable<number>();
    for (let key = 1; key <= 40; key++) table.set(key, key);
    const grown = table.capacity;
    expect(grown).toBeGreaterThanOrEqual(64);
    for (let key = 1; key <= 40; key++) table.delete(key);
    for (let key = 41; key <= 80; key++) table.set(key, key);
    expect(table.capacity).toBe(grown);
  });
});
