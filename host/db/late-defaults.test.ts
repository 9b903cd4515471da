/** Defaults added after rows were stored are filled into their text, exactly as parsing would fill them. */
import { describe, expect, it } from "vitest";
import { materialize, materializeJson, parseStoredRow } from "./rows.js";
import type { CompiledTable } from "./stored-schema.js";

const tableWith = (lateDefaults: Array<[string, string | number | boolean]>) =>
  ({ lateDefaults }) as unknown as CompiledTable;

/** What parsing the row and filling its defaults gives, as text (the order of its fields included). */
const parsed = (table: CompiledTable, json: string) =>
  JSON.stringify(materialize(table, parseStoredRow(json)));

describe("materializeJson", () => {
  it("adds a missing default at the end, and leaves a row that has the field alone", () => {
    const table = tableWith([["done", false]]);
    const old = JSON.stringify({ id: "a", createdAt: 1, text: "x" });
    expect(materializeJson(table, old)).toBe('{"id":"a","createdAt":1,"text":"x","done":false}');
    const fresh = JSON.stringify({ id: "a", createdAt: 1, done: true });
    expect(materializeJson(table, fresh)).toBe(fresh);
  });

  it("is not fooled by a field's key written inside a string value", () => {
    const table = tableWith([
      ["done", false],
      ['we"ird', "v"],
    ]);
    for (const text of [
      ',"done":true',
      '{"done":1}',
      '\\",\\"done\\":',
      ',"we\\"ird":',
      'x","done":true,"y":"',
    ])
      for (const row of [
        { id: "a", createdAt: 1, text },
        { text, id: "a", createdAt: 1, done: true },
        { done: false, text, id: "b", createdAt: 2 },
        { 'we"ird': "kept", text, id: "c", createdAt: 3 },
      ]) {
        const json = JSON.stringify(row);
        expect(materializeJson(table, json), json).toBe(parsed(table, json));
      }
  });

  it("agrees with parsing on random rows", () => {
    const names = ["a", "b", "c", "done", "n", "é", "x y"];
    const values = ["", '"', ",", ':"a":', '\\",\\"a\\":', 0, 1.5, true, false, "é€"];
    const pick = <T>(list: T[]) => list[Math.floor(Math.random() * list.length)] as T;
    for (let n = 0; n < 3000; n++) {
      const row: Record<string, unknown> = { id: `r${n}`, createdAt: n };
      for (const name of names) if (Math.random() < 0.5) row[name] = pick(values);
      const defaults = names
        .filter(() => Math.random() < 0.3)
        .map((name) => [name, pick(values)] as [string, string]);
      const table = tableWith(defaults);
      const json = JSON.stringify(row);
      expect(materializeJson(table, json), json).toBe(parsed(table, json));
    }
  });
});
