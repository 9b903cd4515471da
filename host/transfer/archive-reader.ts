import { StringDecoder } from "node:string_decoder";
import yauzl from "yauzl";
import { LIMITS, printable } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { membersMoreThan, opensMoreThan } from "../json-shape.js";
import { isFormatEntry } from "./archive-format.js";

function invalid(message: string): PlatformError {
  return new PlatformError("bad_request", `Invalid archive: ${message}`);
}

function tooLarge(name: string, size: number, limit: number): PlatformError {
  return new PlatformError(
    "too_large",
    `Invalid archive: ${name} is ${size} bytes uncompressed; an import reads at most ${limit} bytes (${(limit / 1024 / 1024).toFixed(2)} MiB) of it.`,
  );
}

function lineTooLong(name: string, number: number, limit: number, because: string): PlatformError {
  return new PlatformError(
    "too_large",
    `Invalid archive: ${name} line ${number} is more than ${limit} bytes; an import reads at most ${limit} bytes (${(limit / 1024 / 1024).toFixed(2)} MiB) of one line${because ? ` (${because})` : ""}.`,
  );
}

const NOTHING = Buffer.alloc(0);
const ASCII = /^[\x20-\x7e]*$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The name of `entry`, read with `decodeStrings: false` (its name and comment are raw bytes): a
 * name marked UTF-8, or of printable ASCII, at most {@link LIMITS.importEntryNameBytes} bytes, that
 * stays inside the archive (no `..`, no absolute path, no backslash) and is one of the format's
 * (archive-format.ts); an entry with a comment is refused. The entry's raw name, extra fields and
 * comment are dropped: they held the whole header they were read from (up to 192 KiB) for as long
 * as the entry was kept.
 */
function entryName(entry: yauzl.Entry): string {
  const raw = entry.fileName as unknown as Buffer;
  if (raw.length > LIMITS.importEntryNameBytes)
    throw invalid(`a file's name is more than ${LIMITS.importEntryNameBytes} bytes.`);
  let name: string;
  if ((entry.generalPurposeBitFlag & 0x800) !== 0) {
    try {
      name = UTF8.decode(raw);
    } catch {
      throw invalid("a file's name is marked as UTF-8 but is not.");
    }
  } else {
    name = raw.toString("latin1");
    if (!ASCII.test(name)) throw invalid("a file's name is neither ASCII nor marked as UTF-8.");
  }
  const wrong = yauzl.validateFileName(name);
  if (wrong !== null)
    throw invalid(`${printable(name)} is not a name of this archive's files (${printable(wrong)}).`);
  // Known names only, as they come: a directory of 200,000 names of junk was kept whole (about
  // 260 MB) until the import's turn came, and only then refused.
  if (!isFormatEntry(name)) throw invalid(`${printable(name)} is not part of the export format.`);
  if (entry.fileCommentLength > 0)
    throw invalid(
      `${name} has a comment; an import archive's files have none (platform export writes none).`,
    );
  Object.assign(entry, {
    fileName: name,
    fileNameRaw: NOTHING,
    extraFieldRaw: NOTHING,
    extraFields: [],
    fileCommentRaw: NOTHING,
    fileComment: "",
    comment: "",
  });
  return name;
}

/**
 * Random access to the files of a zip archive on disk (yauzl): the central directory is read
 * once, names must be unique, and every read checks the size the directory declares against a
 * limit before inflating anything (yauzl then checks that the data has exactly that size), so a
 * small archive cannot inflate into more than its limits.
 */
export class ArchiveReader {
  private constructor(
    private readonly zip: yauzl.ZipFile,
    private readonly entries: Map<string, yauzl.Entry>,
  ) {}

  /**
   * Opens the archive at `path` and reads its directory. Names and comments are left undecoded to
   * yauzl (`decodeStrings: false`), which decodes names not marked UTF-8 as CP437 one character at
   * a time: each 64 KiB comment became about 2 MB of string pieces, kept with its entry, so 8,000
   * of them (within the archive's limits) would take about 16 GB of the host's heap (an attack
   * review, measured per comment). Names are checked and decoded here, comments
   * refused, and each entry keeps none of the raw bytes it was read with.
   */
  static async open(path: string): Promise<ArchiveReader> {
    let zip: yauzl.ZipFile;
    try {
      zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false, decodeStrings: false });
    } catch (error) {
      throw invalid(`not a zip file (${(error as Error).message}).`);
    }
    // Undecoded, the archive's comment is a view of yauzl's whole 64 KiB search buffer.
    Object.assign(zip, { comment: "" });
    const entries = new Map<string, yauzl.Entry>();
    try {
      if (zip.entryCount > LIMITS.importArchiveEntries)
        throw invalid(`more than ${LIMITS.importArchiveEntries} files.`);
      for await (const entry of zip.eachEntry()) {
        const name = entryName(entry);
        if (name.endsWith("/")) continue;
        if (entries.has(name)) throw invalid(`${name} appears twice.`);
        entries.set(name, entry);
      }
    } catch (error) {
      zip.close();
      throw error instanceof PlatformError ? error : invalid((error as Error).message);
    }
    return new ArchiveReader(zip, entries);
  }

  /** Every file name. */
  names(): string[] {
    return [...this.entries.keys()];
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** The uncompressed size the directory declares for `name`. */
  size(name: string): number {
    return this.require(name).uncompressedSize;
  }

  private require(name: string): yauzl.Entry {
    const entry = this.entries.get(name);
    if (!entry) throw invalid(`${name} is missing.`);
    return entry;
  }

  private async open(name: string, limit: number): Promise<NodeJS.ReadableStream> {
    const entry = this.require(name);
    if (entry.uncompressedSize > limit) throw tooLarge(name, entry.uncompressedSize, limit);
    try {
      return await this.zip.openReadStreamPromise(entry);
    } catch (error) {
      throw invalid(`${name} cannot be read (${(error as Error).message}).`);
    }
  }

  /** The bytes of `name`, refused (`413 too_large`) when its declared size is over `limit`. */
  async read(name: string, limit: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of await this.open(name, limit)) chunks.push(chunk as Buffer);
    } catch (error) {
      throw error instanceof PlatformError
        ? error
        : invalid(`${name} is corrupt (${(error as Error).message}).`);
    }
    return Buffer.concat(chunks);
  }

  /** `name` as UTF-8 text. */
  async text(name: string, limit: number): Promise<string> {
    return (await this.read(name, limit)).toString("utf8");
  }

  /**
   * `name` parsed as JSON, within `limit` bytes and `most` objects, arrays and object members,
   * both checked before the host's main thread parses it: the time and memory a parse takes grow
   * with the objects it builds, and 70 KB of zip inflating to 64 MiB of `{},` held the host for two
   * minutes and 1.5 GB of heap.
   */
  async json(name: string, limit: number, most: number = LIMITS.jsonMembers): Promise<unknown> {
    const text = await this.text(name, limit);
    // Text shorter than a limit cannot pass it.
    if (text.length > most && opensMoreThan(text, most))
      throw invalid(`${name} holds more than ${most} objects and arrays ("{" and "[", in strings too).`);
    if (text.length > most && membersMoreThan(text, most))
      throw invalid(`${name} holds more than ${most} object members.`);
    try {
      return JSON.parse(text);
    } catch (error) {
      throw error instanceof PlatformError ? error : invalid(`${name} is not JSON.`);
    }
  }

  /**
   * The non-empty lines of `name` (UTF-8), with their 1-based line numbers, as they inflate. Each
   * chunk is scanned once (a line longer than a chunk is kept in pieces, joined when it ends): a
   * line split and rescanned whole at every chunk cost its length squared, 20 s of the host's main
   * thread for one 24 MiB line of a 30 KB archive. A line of more than `lineBytes` bytes is refused
   * (`413 too_large`, naming the file and line, and `because` when given) as soon as its kept
   * pieces pass them, before it is joined: what a caller parses and stores of one line is bounded
   * by that, not by the file's limit.
   */
  async *lines(
    name: string,
    limit: number,
    lineBytes: number = limit,
    because = "",
  ): AsyncGenerator<[line: string, number: number]> {
    const decoder = new StringDecoder("utf8");
    const pieces: string[] = [];
    let number = 0;
    let bytes = 0;
    const keep = (piece: string) => {
      if (piece.length === 0) return;
      bytes += Buffer.byteLength(piece, "utf8");
      if (bytes > lineBytes) throw lineTooLong(name, number + 1, lineBytes, because);
      pieces.push(piece);
    };
    const take = () => {
      const line = pieces.length === 1 ? (pieces[0] as string) : pieces.join("");
      pieces.length = 0;
      bytes = 0;
      return line;
    };
    try {
      for await (const chunk of await this.open(name, limit)) {
        const text = decoder.write(chunk as Buffer);
        let start = 0;
        for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
          keep(text.slice(start, end));
          start = end + 1;
          const line = take();
          number++;
          if (line.length > 0) yield [line, number];
        }
        if (start < text.length) keep(text.slice(start));
      }
      keep(decoder.end());
    } catch (error) {
      throw error instanceof PlatformError
        ? error
        : invalid(`${name} is corrupt (${(error as Error).message}).`);
    }
    const last = take();
    if (last.length > 0) yield [last, number + 1];
  }

  close(): void {
    this.zip.close();
  }
}
