import { StringDecoder } from "node:string_decoder";
import yauzl from "yauzl";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { membersMoreThan, opensMoreThan } from "../json-shape.js";

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

  /** Opens the archive at `path` and reads its directory. */
  static async open(path: string): Promise<ArchiveReader> {
    let zip: yauzl.ZipFile;
    try {
      zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false, strictFileNames: true });
    } catch (error) {
      throw invalid(`not a zip file (${(error as Error).message}).`);
    }
    const entries = new Map<string, yauzl.Entry>();
    try {
      if (zip.entryCount > LIMITS.importArchiveEntries)
        throw invalid(`more than ${LIMITS.importArchiveEntries} files.`);
      for await (const entry of zip.eachEntry()) {
        if (entry.fileName.endsWith("/")) continue;
        if (entries.has(entry.fileName)) throw invalid(`${entry.fileName} appears twice.`);
        entries.set(entry.fileName, entry);
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
