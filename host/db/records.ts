import { afterPrefix, decodeText, encodeText, TAG_STRING } from "./codec.js";
import { hostKey } from "./keys.js";
import { collect, hasKeyUnder, type KvSnapshot, type KvStore, type LockFence } from "./kv/index.js";

/**
 * A namespace of host-wide JSON records (deployment records, artifacts, ...), kept in the same
 * store as the data so a record and what it describes can be written in one batch.
 */
export class RecordStore<T> {
  private readonly prefix: Buffer;

  constructor(
    private readonly store: KvStore,
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
    const json = await this.store.get(this.key(id));
    return json === undefined ? undefined : (JSON.parse(json) as T);
  }

  /**
   * Whether record `id` exists, from its key alone: an artifact's record holds its whole bundle
   * (16 MB at most), which a get parses on the main thread.
   */
  has(id: string): Promise<boolean> {
    // A key ends with its id's terminator: no other record's key starts with it.
    return hasKeyUnder(this.store, this.key(id));
  }

  /** Stores the record `id`; with `fence`, only while the lock it is of is held (see `KvStore.batch`). */
  async put(id: string, value: T, fence?: LockFence): Promise<void> {
    await this.store.batch([{ type: "put", key: this.key(id), value: JSON.stringify(value) }], [], fence);
  }

  /** Removes the record `id` (no error when absent); `fence` as {@link put}'s. */
  async delete(id: string, fence?: LockFence): Promise<void> {
    await this.store.batch([{ type: "del", key: this.key(id) }], [], fence);
  }

  /** The key range of every record whose id starts with `prefix`. */
  private idRange(prefix: string): { gte: Buffer; lt: Buffer } {
    const start = Buffer.concat([this.prefix, Buffer.from([TAG_STRING]), Buffer.from(prefix, "utf8")]);
    return { gte: start, lt: afterPrefix(start) };
  }

  /**
   * Records whose id starts with `prefix`, in id order, at most `limit`; read from `view` when
   * given (a snapshot: an export reads every record as of one moment).
   */
  async listPrefix(
    prefix: string,
    limit = Number.POSITIVE_INFINITY,
    view: Pick<KvSnapshot, "iterate"> = this.store,
  ): Promise<T[]> {
    const { gte: start } = this.idRange(prefix);
    const entries = await collect(
      view.iterate({
        gte: start,
        lt: afterPrefix(start),
        ...(Number.isFinite(limit) ? { limit } : {}),
      }),
    );
    return entries.map(([, json]) => JSON.parse(json) as T);
  }

  /**
   * Whether some record whose id starts with `prefix` passes `test`: read in batches, stopping at
   * the first match, so a long prefix never sits in memory at once.
   */
  async someInPrefix(prefix: string, test: (record: T) => boolean): Promise<boolean> {
    const iterator = this.store.iterate(this.idRange(prefix));
    try {
      for (let batch = await iterator.next(500); batch.length > 0; batch = await iterator.next(500))
        if (batch.some(([, json]) => test(JSON.parse(json) as T))) return true;
      return false;
    } finally {
      await iterator.close();
    }
  }

  /**
   * Removes every record whose id starts with `prefix` (a deleted deployment's `<id>/` records);
   * idempotent, so an interrupted removal can simply run again. `fence` as {@link put}'s.
   */
  async deletePrefix(prefix: string, fence?: LockFence): Promise<void> {
    await this.store.clear(this.idRange(prefix), fence);
  }

  /**
   * Writes several records (and deletions) of this store in one atomic batch, with `extra`
   * operations; with `fence`, only while the lock it is of is held (see `KvStore.batch`).
   */
  async batch(
    writes: Array<{ id: string; value: T | null }>,
    extra: Array<{ key: Buffer; value: string | null }> = [],
    fence?: LockFence,
  ): Promise<void> {
    const operations = [
      ...writes.map(({ id, value }) => ({
        key: this.key(id),
        value: value === null ? null : JSON.stringify(value),
      })),
      ...extra,
    ];
    await this.store.batch(
      operations.map(({ key, value }) =>
        value === null ? { type: "del" as const, key } : { type: "put" as const, key, value },
      ),
      [],
      fence,
    );
  }

  /** The first `limit` records with their ids, in id order. */
  async entries(limit: number): Promise<Array<[id: string, value: T]>> {
    const found = await collect(
      this.store.iterate({ gte: this.prefix, lt: afterPrefix(this.prefix), limit }),
    );
    return found.map(([key, json]) => [decodeText(key, this.prefix.length).value, JSON.parse(json) as T]);
  }

  /**
   * Every record as of `view` (a snapshot), in id order, a page of at most `size` at a time: a
   * host backup walks every object record without holding them all.
   */
  async *pagesAt(view: Pick<KvSnapshot, "iterate">, size = 500): AsyncGenerator<T[]> {
    const iterator = view.iterate({ gte: this.prefix, lt: afterPrefix(this.prefix) });
    try {
      for (;;) {
        const entries = await iterator.next(size);
        if (entries.length === 0) return;
        yield entries.map(([, json]) => JSON.parse(json) as T);
      }
    } finally {
      await iterator.close();
    }
  }

  /**
   * Every record with its id, in id order, a page of at most `size` at a time: as of `view` when
   * given (a snapshot), else not as of one moment.
   */
  async *entryPages(
    size = 500,
    view: Pick<KvSnapshot, "iterate"> = this.store,
  ): AsyncGenerator<Array<[id: string, value: T]>> {
    const iterator = view.iterate({ gte: this.prefix, lt: afterPrefix(this.prefix) });
    try {
      for (;;) {
        const entries = await iterator.next(size);
        if (entries.length === 0) return;
        yield entries.map(([key, json]) => [
          decodeText(key, this.prefix.length).value,
          JSON.parse(json) as T,
        ]);
      }
    } finally {
      await iterator.close();
    }
  }

  /** Every record by its id, as of one moment (one snapshot, however many reads it takes). */
  async entriesAtOnce(): Promise<Map<string, T>> {
    const view = await this.store.readSnapshot();
    try {
      const found = new Map<string, T>();
      for await (const page of this.entryPages(500, view))
        for (const [id, value] of page) found.set(id, value);
      return found;
    } finally {
      await view.close();
    }
  }

  /** Every record's id (not its value: an artifact's is a whole bundle), in id order, a page at a time. */
  async *idPages(size = 500): AsyncGenerator<string[]> {
    const iterator = this.store.iterate({ gte: this.prefix, lt: afterPrefix(this.prefix), values: false });
    try {
      for (;;) {
        const entries = await iterator.next(size);
        if (entries.length === 0) return;
        yield entries.map(([key]) => decodeText(key, this.prefix.length).value);
      }
    } finally {
      await iterator.close();
    }
  }

  /**
   * The ids of the records whose id starts with `prefix`, in id order, read from their keys alone
   * (a client file's record holds its bytes).
   */
  async idsUnder(prefix: string): Promise<string[]> {
    const { gte, lt } = this.idRange(prefix);
    const entries = await collect(this.store.iterate({ gte, lt, values: false }));
    return entries.map(([key]) => decodeText(key, this.prefix.length).value);
  }

  /** Every record, in id order. */
  async list(): Promise<T[]> {
    const entries = await collect(this.store.iterate({ gte: this.prefix, lt: afterPrefix(this.prefix) }));
    return entries.map(([, json]) => JSON.parse(json) as T);
  }
}
