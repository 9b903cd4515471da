import type { NotReady } from "../fast-path.js";
import type { KvIterateOptions, KvIterator, KvSnapshot } from "./kv.js";
import type { PostgresSnapshot } from "./postgres-snapshot.js";

/** A lazy snapshot lent to several readers (see `PostgresKv.readSnapshot`), and how many hold it. */
export interface SharedSnapshot {
  readonly snapshot: PostgresSnapshot;
  readers: number;
}

/**
 * One reader's use of a {@link SharedSnapshot}: reads go to the shared one; closing gives it back,
 * and the last reader's close closes it. A reader never commits on it.
 */
export class SharedSnapshotLoan implements KvSnapshot {
  private closed = false;

  /** `onLastClose` runs once no reader holds `shared`, before it closes. */
  constructor(
    private readonly shared: SharedSnapshot,
    private readonly onLastClose: (shared: SharedSnapshot) => void,
  ) {}

  private require(): PostgresSnapshot {
    if (this.closed) throw new Error("This snapshot is closed.");
    return this.shared.snapshot;
  }

  get(key: Buffer): Promise<string | undefined> {
    try {
      return this.require().get(key);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  tryGetSync(key: Buffer): string | undefined | NotReady {
    return this.require().tryGetSync(key);
  }

  iterate(options: KvIterateOptions): KvIterator {
    return this.require().iterate(options);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (--this.shared.readers > 0) return;
    this.onLastClose(this.shared);
    await this.shared.snapshot.close();
  }
}
