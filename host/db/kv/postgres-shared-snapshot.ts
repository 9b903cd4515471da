import type { NotReady } from "../fast-path.js";
import { NOT_READY } from "../fast-path.js";
import type { KvIterateOptions, KvIterator, KvSnapshot } from "./kv.js";
import type { PostgresSnapshot } from "./postgres-snapshot.js";

/** A lazy snapshot lent to several readers (see `PostgresKv.readSnapshot`), and how many hold it. */
export interface SharedSnapshot {
  readonly snapshot: PostgresSnapshot;
  readers: number;
}

/**
 * One reader's use of a {@link SharedSnapshot}, which it joins with its first read (`join` counts
 * it in): a reader made long before it reads (a call waiting for its deployment's turn) holds
 * nobody's connection meanwhile, and the snapshot it joins, not begun yet, still sees every write
 * that landed before the reader was made. Reads go to the shared one; closing gives it back, and
 * the last reader's close closes it. A reader never commits on it.
 */
export class SharedSnapshotLoan implements KvSnapshot {
  private closed = false;
  private shared: SharedSnapshot | undefined;

  /** `onLastClose` runs once no reader holds the joined snapshot, before it closes. */
  constructor(
    private readonly join: () => SharedSnapshot,
    private readonly onLastClose: (shared: SharedSnapshot) => void,
  ) {}

  private require(): PostgresSnapshot {
    if (this.closed) throw new Error("This snapshot is closed.");
    this.shared ??= this.join();
    return this.shared.snapshot;
  }

  get(key: Buffer): Promise<string | undefined> {
    try {
      return this.require().get(key);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Before its first read, nothing is known at once (a snapshot not begun knows nothing). */
  tryGetSync(key: Buffer): string | undefined | NotReady {
    if (this.shared === undefined && !this.closed) return NOT_READY;
    return this.require().tryGetSync(key);
  }

  /** A scan that stops with the loan: an abandoned reader's scan no longer reads on the others' snapshot. */
  iterate(options: KvIterateOptions): KvIterator {
    const iterator = this.require().iterate(options);
    return {
      next: (max) => {
        if (this.closed) return Promise.reject(new Error("This snapshot is closed."));
        return iterator.next(max);
      },
      close: () => iterator.close(),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const shared = this.shared;
    if (shared === undefined || --shared.readers > 0) return;
    this.onLastClose(shared);
    await shared.snapshot.close();
  }
}
