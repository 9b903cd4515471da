import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import yazl from "yazl";
import { ArchiveReader } from "./archive-reader.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-archive-reader-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function zipOf(name: string, text: string): Promise<string> {
  const path = join(dir, `${name}-${Math.random().toString(36).slice(2)}.zip`);
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from(text, "utf8"), name);
  zip.end();
  const out = createWriteStream(path);
  zip.outputStream.pipe(out);
  await finished(out);
  return path;
}

async function linesOf(text: string): Promise<Array<[string, number]>> {
  const reader = await ArchiveReader.open(await zipOf("rows.jsonl", text));
  try {
    const lines: Array<[string, number]> = [];
    for await (const line of reader.lines("rows.jsonl", 64 * 1024 * 1024)) lines.push(line);
    return lines;
  } finally {
    reader.close();
  }
}

it("yields each non-empty line with its number, across chunks and split characters", async () => {
  // Lines far longer than an inflated chunk, multi-byte characters at every offset, empty lines
  // counted but not yielded, and a last line without its newline.
  const long = "é€𝄞a".repeat(120_000);
  const text = `first\n\n${long}\nshort\n${"x".repeat(300_000)}\n\nlast`;
  expect(await linesOf(text)).toEqual([
    ["first", 1],
    [long, 3],
    ["short", 4],
    ["x".repeat(300_000), 5],
    ["last", 7],
  ]);
  expect(await linesOf("only\n")).toEqual([["only", 1]]);
  expect(await linesOf("")).toEqual([]);
});

it("refuses a line past its bound as it inflates, naming the file and line; one at the bound passes", async () => {
  // Bytes, not characters: "é" is two bytes of UTF-8.
  const text = `short\n${"é".repeat(500)}\n${"é".repeat(500)}x\nafter`;
  const reader = await ArchiveReader.open(await zipOf("rows.jsonl", text));
  const lines: number[] = [];
  try {
    await expect(
      (async () => {
        for await (const [, number] of reader.lines("rows.jsonl", 1024 * 1024, 1000, "why"))
          lines.push(number);
      })(),
    ).rejects.toMatchObject({
      code: "too_large",
      message:
        "Invalid archive: rows.jsonl line 3 is more than 1000 bytes; an import reads at most 1000 bytes (0.00 MiB) of one line (why).",
    });
  } finally {
    reader.close();
  }
  expect(lines).toEqual([1, 2]);
});
