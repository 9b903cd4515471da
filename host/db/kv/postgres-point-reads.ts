import { NOT_READY, type NotReady } from "../fast-path.js";
import { type RunSql, selectValue, selectValues } from "./postgres-sql.js";

/** Point reads a snapshot remembers at most. */
const KNOWN_KEYS = 4096;

interface PendingGet {
  key: Buffer;
  hex: string;
  resolve: (value: string | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * A PostgreSQL snapshot's point reads. Those asked for at once (in the same tick: a handler's
 * `Promise.all`, the counts a mutation moves) go to the server as ONE query; a key read before is
 * answered from memory, since a snapshot's view never changes (the mutations of a group commit
 * read the same rows again).
 */
export class PointReads {
  private gets: PendingGet[] | undefined;
  /** Values read so far, by hex key (up to {@link KNOWN_KEYS}). */
  private readonly known = new Map<string, string | undefined>();

  constructor(
    private readonly run: RunSql,
    private readonly table: string,
  ) {}

  /** The value of `key`, from memory when it was read before, else with the others of this tick. */
  get(key: Buffer): Promise<string | undefined> {
    const hex = key.toString("hex");
    if (this.known.has(hex)) return Promise.resolve(this.known.get(hex));
    return new Promise((resolve, reject) => {
      const read = { key, hex, resolve, reject };
      if (this.gets) this.gets.push(read);
      else {
        this.gets = [read];
        queueMicrotask(() => this.readGets());
      }
    });
  }

  /** The value of a key read before, at once; {@link NOT_READY} for any other. */
  tryGetSync(key: Buffer): string | undefined | NotReady {
    if (this.known.size === 0) return NOT_READY;
    const hex = key.toString("hex");
    return this.known.has(hex) ? this.known.get(hex) : NOT_READY;
  }

  /** Notes `value` as the value of `key` in this snapshot (read by other means), and returns it. */
  remember(key: Buffer | string, value: string | undefined): string | undefined {
    if (this.known.size < KNOWN_KEYS)
      this.known.set(typeof key === "string" ? key : key.toString("hex"), value);
    return value;
  }

  private async readGets(): Promise<void> {
    const gets = this.gets ?? [];
    this.gets = undefined;
    try {
      if (gets.length === 1) {
        const only = gets[0] as PendingGet;
        only.resolve(this.remember(only.hex, await selectValue(this.run, this.table, only.key)));
        return;
      }
      const values = await selectValues(
        this.run,
        this.table,
        gets.map((get) => get.key),
      );
      for (const [i, get] of gets.entries()) get.resolve(this.remember(get.hex, values[i]));
    } catch (error) {
      for (const get of gets) get.reject(error);
    }
  }
}
