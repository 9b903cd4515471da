import type { NotReady } from "../fast-path.js";
import { NOT_READY } from "../fast-path.js";
import type { KeptScan, KvIterateOptions, KvIterator, KvSnapshot } from "./kv.js";
import type { PostgresSnapshot } from "./postgres-snapshot.js";

/**
 * Whether a reader should begin its snapshot before its handler runs, and what it tells when done
 * (postgres-scan-memos.ts): whether kept reads answered, or could have answered, all it read.
 */
export interface EarlyBegins {
  shouldBegin(): boolean;
  done(atOnce: boolean): void;
}

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
  /** Reads made, and those that went to the server while no kept read could have answered them. */
  private reads = 0;
  private missed = 0;
  /** Set when {@link prepare} began the snapshot for this reader. */
  private begunEarly = false;

  /** `onLastClose` runs once no reader holds the joined snapshot, before it closes. */
  constructor(
    private readonly join: () => SharedSnapshot,
    private readonly onLastClose: (shared: SharedSnapshot) => void,
    private readonly early?: EarlyBegins,
  ) {}

  /**
   * The reader's handler is about to run: while its owner's readers are answered from kept reads,
   * join now and begin the shared snapshot with the end of this turn of the event loop, so they
   * answer at once. Before its turn, a reader holds no connection.
   */
  async prepare(): Promise<void> {
    if (this.closed || this.shared !== undefined || !this.early?.shouldBegin()) return;
    const snapshot = this.require();
    // Joined a snapshot that keeps nothing (made while its owner's readers were sampled): no use.
    if (!snapshot.keepsReads) return;
    this.begunEarly = true;
    await snapshot.beginSoon();
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
   * snapshot. When it closes, the view is named: was the scan kept for it already (it is kept then)?
   */
  iterate(options: KvIterateOptions): KvIterator {
    const snapshot = this.require();
    const iterator = snapshot.iterate(options);
    this.reads++;
    let taken = 0;
    let closed = false;
    return {
      next: async (max) => {
        if (this.closed) throw new Error("This snapshot is closed.");
        const entries = await iterator.next(max);
        taken += entries.length;
        return entries;
      },
      close: () => {
        // Asked before the scan itself is kept, as it is when it closes.
        if (!closed && !snapshot.keeps(options, taken)) this.missed++;
        closed = true;
        return iterator.close();
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A reader begun early that read nothing paid a round trip for nothing. One whose snapshot kept
    // nothing (its owner's readers are sampled) tells nothing.
    const told = this.begunEarly || (this.reads > 0 && this.shared?.snapshot.keepsReads === true);
    if (told) this.early?.done(this.reads > 0 && this.missed === 0);
    const shared = this.shared;
    if (shared === undefined || --shared.readers > 0) return;
    this.onLastClose(shared);
    await shared.snapshot.close();
  }
}
