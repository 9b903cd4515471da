import type { KvStore, LockFence } from "./kv/index.js";
import { countRowBytes, parseRowBytes, rowBytesKey } from "./row-bytes.js";
import type { CompiledTable } from "./stored-schema.js";

/**
 * One deployment's row bytes as its open database knows them (see row-bytes.ts): the total stored
 * under {@link key}, or undefined until known. A deployment stored before the total existed has it
 * counted once, under the write lock, when first needed. Read and moved under the write lock only;
 * other processes' commits are read with it.
 */
export class RowBytesTotal {
  /** The metadata key the total is stored under (a decimal number). */
  readonly key: Buffer;
  /** The total as stored, undefined until known. */
  known: number | undefined;

  constructor(
    deployment: string,
    /** The most row bytes the deployment may store. */
    readonly limit: number,
  ) {
    this.key = rowBytesKey(deployment);
  }

  /** Takes the total from its stored record's text (undefined: none stored, not counted yet). */
  read(stored: string | undefined): void {
    this.known = parseRowBytes(stored);
  }

  /**
   * The total, counted from the rows and index entries of `tables` in `store` (on a snapshot of
   * `owner`'s) and stored first when not known. The caller holds the write lock, so no commit moves
   * it meanwhile; `fence` is that lock's (see `TenantDatabase.exclusive`).
   */
  async current(
    store: KvStore,
    tables: Iterable<CompiledTable>,
    owner: string,
    fence?: LockFence,
  ): Promise<number> {
    if (this.known !== undefined) return this.known;
    const snapshot = await store.snapshot(owner, "write");
    let total: number;
    try {
      total = await countRowBytes(snapshot, tables);
    } finally {
      await snapshot.close();
    }
    await store.batch([{ type: "put", key: this.key, value: String(total) }], [], fence);
    this.known = total;
    return total;
  }
}
