import { randomBytes } from "node:crypto";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { inline, quoteText, writeStatement } from "./postgres-sql.js";

describe("quoteText", () => {
  it("writes every text as pg.escapeLiteral does", () => {
    const texts = [
      "",
      "plain",
      "it's",
      "''",
      "\\",
      "a\\'b",
      String.raw`{"text":"say \"hi\"\n\u0000 C:\\dir\\"}`,
      " E'x' ",
      "$1 $$ $",
      "é ✓ 𝄞",
      "line\nbreak\r\ttab",
    ];
    // Random texts over the characters that matter, and some of every code unit.
    for (let i = 0; i < 500; i++)
      texts.push(
        Array.from(randomBytes(12), (byte) => ["'", "\\", "a", "E", "$", '"', "\n", "é"][byte % 8]).join(""),
      );
    for (let i = 0; i < 100; i++) texts.push(String.fromCharCode(...new Uint16Array(randomBytes(32).buffer)));
    for (const text of texts) expect(quoteText(text)).toBe(pg.escapeLiteral(text));
  });

  it("a value holding a placeholder is not substituted again when a statement is inlined", () => {
    const statement = writeStatement("kv", [
      { type: "put", key: Buffer.from("k1"), value: "$1 and $2" },
      { type: "put", key: Buffer.from("k2"), value: "it's \\ $3" },
    ]);
    const text = inline(statement as NonNullable<typeof statement>) as string;
    expect(text).toContain(`'$1 and $2'`);
    expect(text).toContain(String.raw` E'it''s \\ $3'`);
  });
});

describe("inline", () => {
  it("writes whole numbers as they are, and counts them toward the size past which a statement keeps its parameters (found by review)", () => {
    expect(inline({ text: "SELECT $1 LIMIT $2", values: [Buffer.from("k"), 21] })).toBe(
      "SELECT decode('6b','hex') LIMIT 21",
    );
    // A scan's bounds near the limit, with its count beside them: too large to write as text.
    const bound = Buffer.alloc(600 * 1024, 0xff);
    expect(inline({ text: "SELECT $1, $2, $3", values: [bound, Buffer.from("a"), 50] })).toBeUndefined();
    expect(() => inline({ text: "SELECT $1", values: [2.5] })).toThrow(/No SQL literal/);
  });
});
