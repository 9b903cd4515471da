/**
 * How the host answers a platform call on the wire (one string). Most answers are a
 * {@link SyscallResponse} as JSON. Answers carrying rows read from the store say so in a short
 * header before the rows' JSON, so the isolate can keep that text as it is until the handler
 * touches the rows (runtime/lazy-rows.ts) instead of parsing it and serializing it again:
 * - rows: `R<count>:<JSON array of the rows>`;
 * - a page: `P<count>:<length of meta>:<meta><JSON array of the rows>`, meta being
 *   `{"isDone":...,"continueCursor":...}`.
 */
import type { SyscallResponse } from "./bridge.js";

/** A decoded answer: a plain response, or rows still as JSON text. */
export type SyscallAnswer =
  | { kind: "response"; response: SyscallResponse }
  | { kind: "rows"; count: number; rowsJson: string }
  | { kind: "page"; count: number; rowsJson: string; isDone: boolean; continueCursor: unknown };

/** One stored row's JSON (`null`: no such row) as a plain answer, spliced in without re-encoding. */
export function encodeRowAnswer(row: string | null): string {
  return `{"ok":true,"value":${row ?? "null"}}`;
}

/** `rows` (each a stored row's JSON) as a rows answer. */
export function encodeRowsAnswer(rows: readonly string[]): string {
  return `R${rows.length}:[${rows.join(",")}]`;
}

/** A page of `rows` as a page answer. */
export function encodePageAnswer(rows: readonly string[], isDone: boolean, continueCursor: unknown): string {
  const meta = JSON.stringify({ isDone, continueCursor });
  return `P${rows.length}:${meta.length}:${meta}[${rows.join(",")}]`;
}

function malformed(): Error {
  return new Error("Malformed answer from the host.");
}

/** Reads the non-negative integer that ends just before `text[end]`, starting at `start`. */
function integerAt(text: string, start: number, end: number): number {
  const digits = text.slice(start, end);
  if (end <= start || !/^\d+$/.test(digits)) throw malformed();
  return Number(digits);
}

/** Decodes any answer of the host; anything malformed throws. */
export function decodeSyscallAnswer(text: string): SyscallAnswer {
  const tag = text[0];
  if (tag === "R") {
    const colon = text.indexOf(":");
    const count = integerAt(text, 1, colon);
    return { kind: "rows", count, rowsJson: text.slice(colon + 1) };
  }
  if (tag === "P") {
    const first = text.indexOf(":");
    const count = integerAt(text, 1, first);
    const second = text.indexOf(":", first + 1);
    const metaEnd = second + 1 + integerAt(text, first + 1, second);
    if (metaEnd > text.length) throw malformed();
    const meta = JSON.parse(text.slice(second + 1, metaEnd)) as { isDone: boolean; continueCursor: unknown };
    return {
      kind: "page",
      count,
      rowsJson: text.slice(metaEnd),
      isDone: meta.isDone,
      continueCursor: meta.continueCursor,
    };
  }
  return { kind: "response", response: JSON.parse(text) as SyscallResponse };
}
