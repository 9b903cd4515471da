import { afterPrefix, encodeText } from "./codec.js";
import { hostKey } from "./keys.js";
import type { Level } from "./scan.js";

/**
 * A namespace of host-wide JSON records (deployment records, artifacts, ...), kept in the same
 * store as the data so a record and what it describes can be written in one batch.
 */
export class RecordStore<T> {
  private readonly prefix: Buffer;

  constructor(
    private readonly level: Level,
    namespace: string,
  ) {
    this.prefix = hostKey(namespace);
  }

  /** The storage key of record `id`, for writing it in the same batch as a transaction. */
  key(id: string): Buffer {
    return Buffer.concat([this.prefix, encodeText(id)]);
  }

  /** The record `id`, or undefined. */
  async get(id: string): Promise<T | undefined> {
    const json = await this.level.get(this.key(id));
    return json === undefined ? undefined : (JSON.parse(json) as T);
  }

  /** Stores the record `id`. */
  async put(id: string, value: T): Promise<void> {
    await this.level.put(this.key(id), JSON.stringify(value));
  }

  /** Removes the record `id` (no error when absent). */
  async delete(id: string): Promise<void> {
    await this.level.del(this.key(id));
  }

  /** Every record, in id order. */
  async list(): Promise<T[]> {
    const values = await this.level.values({ gte: this.prefix, lt: afterPrefix(this.prefix) }).all();
    return values.map((json) => JSON.parse(json) as T);
  }
}
