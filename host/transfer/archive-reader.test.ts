import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import yazl from "yazl";
import { LIMITS } from "../../sdk/protocol/index.js";
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
  const reader = await ArchiveReader.open(await zipOf("objects.jsonl", text));
  try {
    const lines: Array<[string, number]> = [];
    for await (const line of reader.lines("objects.jsonl", 64 * 1024 * 1024)) lines.push(line);
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
  const reader = await ArchiveReader.open(await zipOf("objects.jsonl", text));
  const lines: number[] = [];
  try {
    await expect(
      (async () => {
        for await (const [, number] of reader.lines("objects.jsonl", 1024 * 1024, 1000, "why"))
          lines.push(number);
      })(),
    ).rejects.toMatchObject({
      code: "too_large",
      message:
        "Invalid archive: objects.jsonl line 3 is more than 1000 bytes; an import reads at most 1000 bytes (0.00 MiB) of one line (why).",
    });
  } finally {
    reader.close();
  }
  expect(lines).toEqual([1, 2]);
});

/**
 * A zip of `files` (name -> options) whose central directory says the names are not UTF-8 (bit 11
 * cleared), as archivers of other systems write them: yauzl then decodes each name and comment as
 * CP437, one character at a time.
 */
async function zipWithoutUtf8Flag(files: Array<{ name: string; comment?: Buffer }>): Promise<string> {
  const path = join(dir, `cp437-${Math.random().toString(36).slice(2)}.zip`);
  const zip = new yazl.ZipFile();
  // `fileComment` is yazl's (2.5), missing from its types.
  for (const { name, comment } of files)
    zip.addBuffer(Buffer.from("{}"), name, (comment ? { fileComment: comment } : {}) as yazl.Options);
  zip.end();
  const out = createWriteStream(path);
  zip.outputStream.pipe(out);
  await finished(out);
  const bytes = await readFile(path);
  for (let at = bytes.indexOf(CENTRAL_RECORD); at !== -1; at = bytes.indexOf(CENTRAL_RECORD, at + 4))
    bytes.writeUInt16LE(bytes.readUInt16LE(at + 8) & ~0x0800, at + 8);
  await writeFile(path, bytes);
  return path;
}
const CENTRAL_RECORD = Buffer.from([0x50, 0x4b, 0x01, 0x02]);

it("refuses entries with comments, unread: 8,000 of 64 KiB in CP437 would take 16 GB of the host's heap", async () => {
  // Decoded by yauzl one character at a time, each comment became a chain of 65,535 string pieces
  // (about 2 MB of heap), kept with its entry for the whole import.
  const comment = Buffer.alloc(65_535, 0xb0);
  const path = await zipWithoutUtf8Flag([{ name: "schema.json" }, { name: "objects.jsonl", comment }]);
  await expect(ArchiveReader.open(path)).rejects.toThrow(
    "Invalid archive: objects.jsonl has a comment; an import archive's files have none (platform export writes none).",
  );
});

it("reads names written without the UTF-8 flag when they are ASCII, and refuses other bytes or long names", async () => {
  const reader = await ArchiveReader.open(await zipWithoutUtf8Flag([{ name: "tables/items.jsonl" }]));
  try {
    expect(reader.names()).toEqual(["tables/items.jsonl"]);
  } finally {
    reader.close();
  }
  await expect(ArchiveReader.open(await zipWithoutUtf8Flag([{ name: "tables/ité.jsonl" }]))).rejects.toThrow(
    "Invalid archive: a file's name is neither ASCII nor marked as UTF-8.",
  );
  const long = `tables/${"x".repeat(LIMITS.importEntryNameBytes)}`;
  await expect(ArchiveReader.open(await zipWithoutUtf8Flag([{ name: long }]))).rejects.toThrow(
    `Invalid archive: a file's name is more than ${LIMITS.importEntryNameBytes} bytes.`,
  );
  // Names yazl would not write, put in place of one of the same length.
  const outside = (name: string) => `Invalid archive: ${name} is not a name of this archive's files`;
  for (const [written, name, refusal] of [
    ["aa/escape.json", "../escape.json", outside("../escape.json")],
    ["xabsolute.json", "/absolute.json", outside("/absolute.json")],
    ["back_slash.json", "back\\slash.json", outside("back\\slash.json")],
    ["C_/drive.json", "C:/drive.json", outside("C:/drive.json")],
    [
      "tables/x_.jsonl",
      "tables/x\u001b.jsonl",
      "Invalid archive: a file's name is neither ASCII nor marked as UTF-8.",
    ],
  ]) {
    const path = await zipWithoutUtf8Flag([{ name: written as string }]);
    const bytes = await readFile(path);
    for (let at = bytes.indexOf(written as string); at !== -1; at = bytes.indexOf(written as string, at + 1))
      bytes.write(name as string, at, "latin1");
    await writeFile(path, bytes);
    await expect(ArchiveReader.open(path), name).rejects.toThrow(refusal as string);
  }
});

it("refuses a name that is not part of the export format as the directory is read, escape codes shown escaped", async () => {
  // Marked UTF-8 (as yazl writes them), such names may hold any character: 200,000 of them were
  // kept until the import's turn came, and only then refused.
  await expect(ArchiveReader.open(await zipOf("notes.txt", "{}"))).rejects.toThrow(
    "Invalid archive: notes.txt is not part of the export format.",
  );
  await expect(ArchiveReader.open(await zipOf("x\u001b]52;c;aGk=\u0007", "{}"))).rejects.toThrow(
    "Invalid archive: x\\u001b]52;c;aGk=\\u0007 is not part of the export format.",
  );
});
