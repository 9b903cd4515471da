import { describe, expect, it } from "vitest";
import {
  decodeSyscallAnswer,
  encodePageAnswer,
  encodeRowAnswer,
  encodeRowsAnswer,
} from "./syscall-answer.js";

const rows = ['{"_id":"a","t":"x:y"}', '{"_id":"b","t":"P3:[{"}'];

describe("syscall answers", () => {
  it("carries rows as their text with their count", () => {
    expect(decodeSyscallAnswer(encodeRowsAnswer(rows))).toEqual({
      kind: "rows",
      count: 2,
      rowsJson: `[${rows.join(",")}]`,
    });
    expect(decodeSyscallAnswer(encodeRowsAnswer([]))).toEqual({ kind: "rows", count: 0, rowsJson: "[]" });
  });

  it("carries a page with its cursor, whatever the cursor holds", () => {
    const cursor = 'R1:P2:{"]:[';
    expect(decodeSyscallAnswer(encodePageAnswer(rows, false, cursor))).toEqual({
      kind: "page",
      count: 2,
      rowsJson: `[${rows.join(",")}]`,
      isDone: false,
      continueCursor: cursor,
    });
    expect(decodeSyscallAnswer(encodePageAnswer([], true, null))).toMatchObject({
      isDone: true,
      continueCursor: null,
    });
  });

  it("carries one row, or its absence, as a plain response", () => {
    expect(decodeSyscallAnswer(encodeRowAnswer('{"_id":"a"}'))).toEqual({
      kind: "response",
      response: { ok: true, value: { _id: "a" } },
    });
    expect(decodeSyscallAnswer(encodeRowAnswer(null))).toEqual({
      kind: "response",
      response: { ok: true, value: null },
    });
  });

  it("leaves every other answer a JSON response", () => {
    expect(decodeSyscallAnswer('{"ok":true,"value":[1]}')).toEqual({
      kind: "response",
      response: { ok: true, value: [1] },
    });
  });

  it("refuses malformed headers", () => {
    for (const text of ["R:[]", "Rx:[]", "R-1:[]", "P1:[]", "P1:99:{}[]", "P1:x:{}[]", "R1", "nonsense"])
      expect(() => decodeSyscallAnswer(text), text).toThrow();
  });
});
