import type { NotReady } from "../fast-path.js";
import { NOT_READY } from "../fast-path.js";
import type { KeptScan, KvIterateOptions, KvIterator, KvSnapshot } from "./kv.js";
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
 * the last reader's close closes it. A reader never commits on it. Its scans may be answered at
 * once from those kept for the view (postgres-scan-memos.ts).
 */
export class SharedSnapshotLoan implements KvSnapshot {
  private closed = false;
  private shared: SharedSnapshot | undefined;
  /** Reads made, and those that went to the server while no kept scan could have answered them. */
  private reads = 0;
  private missed = 0;

  /**
   * `onLastClose` runs once no reader holds the joined snapshot, before it closes; `onDone` when
   * this reader closes having read, with whether kept scans answered (or could have) all of it.
   */
  constructor(
    private readonly join: () => SharedSnapshot,
    private readonly onLastClose: (shared: SharedSnapshot) => void,
    private readonly onDone: (atOnce: boolean) => void = () => {},
  ) {}

  /** Joins now and begins the shared snapshot with this tick's end, so kept scans can answer at once. */
  async beginEarly(): Promise<void> {
    if (!this.closed) await this.require().beginSoon();
  }

  private require(): PostgresSnapshot {
    if (this.closed) throw new Error("This snapshot is closed.");
    this.shared ??= this.join();
    return this.shared.snapshot;
  }

  async get(key: Buffer): Promise<string | undefined> {
    const snapshot = this.require();
    this.reads++;
    const { value, kept } = await snapshot.readPoint(key);
    if (!kept) this.missed++;
    return value;
  }

  /** Before its first read, nothing is known at once (a snapshot not begun knows nothing). */
  tryGetSync(key: Buffer): string | undefined | NotReady {
    if (this.shared === undefined && !this.closed) return NOT_READY;
    const known = this.require().tryGetSync(key);
    if (known !== NOT_READY) this.reads++;
    return known;
  }

  tryScanSync(options: KvIterateOptions, want: number): KeptScan | NotReady {
    if (this.shared === undefined || this.closed) return NOT_READY;
    const kept = this.shared.snapshot.tryScanSync(options, want);
    if (kept !== NOT_READY) this.reads++;
    return kept;
  }

  /**
   * A scan that stops with the loan: an abandoned reader's scan no longer reads on the others'
   * snapshot. Once its first entries are in, the view is named: was the scan kept for it already?
   */
  iterate(options: KvIterateOptions): KvIterator {
    const snapshot = this.require();
    const iterator = snapshot.iterate(options);
    this.reads++;
    let first = true;
    return {
      next: async (max) => {
        if (this.closed) throw new Error("This snapshot is closed.");
        const entries = await iterator.next(max);
        if (first) {
          first = false;
          if (!snapshot.keeps(options)) this.missed++;
        }
        return entries;
      },
      close: () => iterator.close(),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reads > 0) this.onDone(this.missed === 0);
    const shared = this.shared;
    if (shared === undefined || --shared.readers > 0) return;
    this.onLastClose(shared);
    await shared.snapshot.close();
  }
}
