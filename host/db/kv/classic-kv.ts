import { setImmediate as nextTurn } from "node:timers/promises";
import { ClassicLevel } from "classic-level";
import { LIMITS } from "../../../sdk/protocol/index.js";
import { NOT_READY, type NotReady } from "../fast-path.js";
import {
  foldBatch,
  foldInTurns,
  LARGE_BATCH,
  OPERATIONS_PER_TURN,
  type SettledOperation,
} from "./batch-fold.js";
import { LOCAL_BUS } from "./bus.js";
import {
  type KeptScan,
  type KvIterateOptions,
  type KvIterator,
  type KvOperation,
  type KvRange,
  type KvSnapshot,
  NO_KEY,
} from "./kv.js";
import { SnapshotLender, type SnapshotLoan } from "./snapshot-lender.js";
import { KvStoreBase } from "./store.js";

type Level = ClassicLevel<Buffer, string>;
type LevelSnapshot = ReturnType<Level["snapshot"]>;

/**
 * How many bytes one native `nextv` may gather. classic-level's default (16 KiB) would split a page of
 * rows into many round trips; one handler cannot read more than the bytesRead budget anyway.
 */
const VALUE_BATCH_BYTES = LIMITS.bytesRead;
const KEY_BATCH_BYTES = 256 * 1024;

/**
 * The key encoding of scans that need no keys. classic-level makes one Buffer per key it returns
 * (about 1 µs each, several times the cost of reading the entry); a `utf8` key is a short string.
 * Range bounds pass through as the buffers they are (the binding takes either), and every key
 * read comes back as {@link NO_KEY}: the text of a binary key is meaningless. A scan that reads
 * values does not read keys at all (classic-level's `keys: false`): decoding a binary key as text
 * cost more than a third of such a scan, about 0.6 µs per entry. One that reads neither (a count)
 * still reads the keys as text, since classic-level returns no entry that has neither.
 */
const KEYLESS = {
  name: "platform-keyless",
  format: "utf8",
  encode: (key: Buffer) => key,
  decode: () => NO_KEY,
} as const;

function iterate(level: Level, options: KvIterateOptions, snapshot?: LevelSnapshot): KvIterator {
  const values = options.values !== false;
  const keys = options.keys !== false || !values;
  const iterator = level.iterator({
    gte: options.gte,
    lt: options.lt,
    reverse: options.reverse === true,
    keys,
    values,
    ...(options.keys === false ? { keyEncoding: KEYLESS as never } : {}),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    ...(snapshot ? { snapshot } : {}),
    highWaterMarkBytes: values ? VALUE_BATCH_BYTES : KEY_BATCH_BYTES,
  });
  return {
    next: async (max) => {
      const entries = (await iterator.nextv(max)) as Array<[Buffer | undefined, string | undefined]>;
      // Every key or value not read is absent; the interface promises NO_KEY and strings.
      if (!values) for (const entry of entries) entry[1] = "";
      if (!keys) for (const entry of entries) entry[0] = NO_KEY;
      return entries as Array<[Buffer, string]>;
    },
    close: () => iterator.close(),
  };
}

/**
 * `operations` as LevelDB takes them: an `add` becomes the put or del of its sum, read from the
 * latest state (the caller holds the write lock, so no one else moves the count meanwhile).
 */
function settle(level: Level, operations: KvOperation[]): SettledOperation[] {
  if (!operations.some((op) => op.type === "add")) return operations as SettledOperation[];
  return foldBatch(operations, (key) => level.getSync(key));
}

/** One reader's view: a loan of the store's shared LevelDB snapshot (see snapshot-lender.ts). */
class ClassicSnapshot implements KvSnapshot {
  /** The store's encodings, named so abstract-level need not copy its options on every read. */
  private readonly readOptions;

  constructor(
    private readonly level: Level,
    private readonly loan: SnapshotLoan<LevelSnapshot>,
    /** Whose share of the store the reader uses: its scans are kept apart (scan-memo.ts). */
    private readonly owner: string,
  ) {
    this.readOptions = { keyEncoding: "buffer", valueEncoding: "utf8", snapshot: loan.snapshot } as const;
  }

  get(key: Buffer): Promise<string | undefined> {
    return this.level.get(key, this.readOptions);
  }

  /** A point read from LevelDB's caches takes microseconds: served without a thread-pool hop. */
  tryGetSync(key: Buffer): string | undefined {
    return this.level.getSync(key, this.readOptions);
  }

  /** Scans are kept in the view's memo, for the readers of the same owner that share the view (scan-memo.ts). */
  iterate(options: KvIterateOptions): KvIterator {
    const scan = iterate(this.level, options, this.loan.snapshot);
    return this.loan.memo ? this.loan.memo.recording(this.owner, options, scan) : scan;
  }

  tryScanSync(options: KvIterateOptions, want: number): KeptScan | NotReady {
    return this.loan.memo ? this.loan.memo.lookup(this.owner, options, want) : NOT_READY;
  }

  close(): Promise<void> {
    return this.loan.release();
  }
}

/** The embedded backend: one classic-level (LevelDB) database, one process. */
export class ClassicKv extends KvStoreBase {
  readonly kind = "classic-level";
  readonly supports = { syncReads: true, commitKeepsSnapshot: true, sharedAcrossProcesses: false } as const;
  readonly bus = LOCAL_BUS;

  /** Every write goes through it, so readers that start between two writes share one snapshot. */
  private readonly snapshots: SnapshotLender<LevelSnapshot>;

  private constructor(private readonly level: Level) {
    super();
    this.snapshots = new SnapshotLender(() => level.snapshot());
  }

  /** Opens (creating if needed) the LevelDB database at `location`. */
  static async open(location: string): Promise<ClassicKv> {
    const level: Level = new ClassicLevel<Buffer, string>(location, {
      keyEncoding: "buffer",
      valueEncoding: "utf8",
    });
    await level.open();
    return new ClassicKv(level);
  }

  protected _get(key: Buffer): Promise<string | undefined> {
    return this.level.get(key);
  }

  protected _getMany(keys: Buffer[]): Promise<Array<string | undefined>> {
    return this.level.getMany(keys);
  }

  protected _iterate(options: KvIterateOptions): KvIterator {
    return iterate(this.level, options);
  }

  protected async _snapshot(owner: string): Promise<KvSnapshot> {
    return new ClassicSnapshot(this.level, this.snapshots.borrow(), owner);
  }

  /** No other process opens the store: announcements have no one to reach. */
  protected async _batch(operations: KvOperation[]): Promise<void> {
    if (operations.length === 0) return;
    if (operations.length > LARGE_BATCH) return this.chunkedBatch(operations);
    await this.snapshots.writing(
      () => this.level.batch(settle(this.level, operations)),
      (changed) => changed.wrote(operations.map((op) => op.key)),
    );
  }

  /**
   * A large batch (an import's, a mutation's thousands of inserts), still one atomic write: its
   * operations go into LevelDB's batch a few thousand per turn of the event loop (nothing is
   * written, and readers keep their view, until it is whole), then it is written at once. Adds
   * are folded first, a few thousand per turn too, and read the counts they move as they are
   * settled: the caller holds the write lock, so no one else moves a count meanwhile (as in
   * {@link settle}).
   */
  private async chunkedBatch(operations: KvOperation[]): Promise<void> {
    const settled = operations.some((op) => op.type === "add")
      ? await foldInTurns(operations, (key) => this.level.getSync(key))
      : (operations as SettledOperation[]);
    const chained = this.level.batch();
    try {
      let inTurn = 0;
      for (const op of settled) {
        if (op.type === "put") chained.put(op.key, op.value);
        else chained.del(op.key);
        if (++inTurn === OPERATIONS_PER_TURN) {
          inTurn = 0;
          await nextTurn();
        }
      }
    } catch (error) {
      await chained.close();
      throw error;
    }
    // Far more keys than a tracker follows one by one (changed-keys.ts): anything may have changed.
    await this.snapshots.writing(
      () => chained.write(),
      (changed) => changed.anything(),
    );
  }

  protected async _commit(_snapshot: KvSnapshot, operations: KvOperation[]): Promise<void> {
    if (operations.length > 0) await this._batch(operations);
  }

  protected async _clear(range: KvRange): Promise<void> {
    await this.snapshots.writing(
      () => this.level.clear(range),
      (changed) => changed.cleared(range),
    );
  }

  protected async _close(): Promise<void> {
    this.snapshots.retire();
    await this.level.close();
  }
}
