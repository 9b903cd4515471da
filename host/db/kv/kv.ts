/**
 * The key-value store under `host/db`: one interface, several backends. Keys are our encoded byte
 * strings and compare bytewise; values are strings (row JSON, records). A store is storage
 * (snapshots, iteration, batches; see store.ts for the base class every backend extends) plus a
 * host bus (locks and broadcasts across the processes sharing it; see bus.ts). Every backend runs
 * the conformance suite of conformance.ts, guided by its {@link KvSupports}.
 */
import { afterPrefix } from "../codec.js";
import type { NotReady } from "../fast-path.js";
import type { FencedWork, LockFence } from "./lock-fence.js";

/**
 * One write of an atomic batch. An `add` moves the count stored under its key (a decimal integer;
 * none is 0) by `delta`, deleting the key when the sum is 0 or less: the store works the sum out
 * where the write lands, so a writer holding the write lock need not read the count first (on a
 * store that reads over the network, a round trip saved per batch). Two writers adding to one key
 * at once may lose one's add: like every other write of a deployment, adds are made under its
 * write lock. See batch-fold.ts for how a batch's operations on one key combine.
 */
export type KvOperation =
  | { type: "put"; key: Buffer; value: string }
  | { type: "del"; key: Buffer }
  | { type: "add"; key: Buffer; delta: number };

/**
 * What a snapshot is for, on a backend with few connections (PostgreSQL). A `read` (a query's, a
 * backup's) is held to its owner's share of them; a `write` (a mutation's, a migration's, an
 * import's: taken under the deployment's write lock, whose own connection it holds meanwhile) goes
 * past the share, though not into the few kept for owners holding none: refused for its owner's
 * readers, it would keep a lock connection while it waits, and a developer's busy deployments could
 * then hold every lock connection of the host.
 */
export type SnapshotUse = "read" | "write";

/** A key range `[gte, lt)`. */
export interface KvRange {
  gte: Buffer;
  lt: Buffer;
}

/** How to walk a range. */
export interface KvIterateOptions extends KvRange {
  reverse?: boolean;
  /** Values are loaded unless false (key-only scans for `count()`). */
  values?: boolean;
  /**
   * Keys are returned unless false. A scan that only counts, or only needs values (nothing to
   * merge by key), passes false: making a key buffer per entry costs more than reading the entry.
   * A backend may then return {@link NO_KEY} in place of every key.
   */
  keys?: boolean;
  /** Stop after this many entries. */
  limit?: number;
}

/** The key of every entry of a scan that asked for no keys (`keys: false`). */
export const NO_KEY: Buffer = Buffer.alloc(0);

/** Entries of a range, fetched in batches. */
export interface KvIterator {
  /** Up to `max` next entries; empty when the range is exhausted. */
  next(max: number): Promise<Array<[Buffer, string]>>;
  close(): Promise<void>;
}

/** A scan a view kept (scan-memo.ts): its first entries, in order, and whether they are all of it. */
export interface KeptScan {
  /** Shared by every reader it answers: read-only. */
  readonly entries: ReadonlyArray<readonly [Buffer, string]>;
  /** The scan reached the end of the range: no entry follows the last one. */
  readonly complete: boolean;
}

/** A consistent point-in-time view: later writes are not visible through it. */
export interface KvSnapshot {
  get(key: Buffer): Promise<string | undefined>;
  /**
   * {@link get} answered at once when the backend can: always where `supports.syncReads`,
   * elsewhere for a key this snapshot has read before; else NOT_READY.
   */
  tryGetSync(key: Buffer): string | undefined | NotReady;
  iterate(options: KvIterateOptions): KvIterator;
  /**
   * The entries an {@link iterate} with `options` would return, at once, when this view kept an
   * earlier scan of that range long enough for a reader taking at most `want` of them; else
   * NOT_READY. Its entries are shared: read-only. A backend without such a memory leaves it out.
   */
  tryScanSync?(options: KvIterateOptions, want: number): KeptScan | NotReady;
  /**
   * Called as the reader's handler is about to run (it had its turn): a backend whose view is known
   * only after a round trip may begin it now, so that {@link tryScanSync} and {@link tryGetSync}
   * answer at once. Never rejects (a failure is the next read's).
   */
  prepare?(): Promise<void>;
  /** Releases the view (safe to call twice, and after {@link KvStore.commit}). */
  close(): Promise<void>;
}

/** What a backend offers beyond the common contract (abstract-level's manifest habit). */
export interface KvSupports {
  /** Snapshots answer point reads at once (`tryGetSync`), without I/O to wait for. */
  readonly syncReads: boolean;
  /** A snapshot stays usable after a commit on it: a group can commit several times on one. */
  readonly commitKeepsSnapshot: boolean;
  /** Other processes may write the same store: locks, clocks and caches must be shared. */
  readonly sharedAcrossProcesses: boolean;
}

/** How a lock across processes is held. */
export interface LockOptions {
  /**
   * An outer lock may be held for long (a whole deploy or delete) and other locks are taken while
   * it is held. Outer locks wait for resources of their own, so however many are held or waited
   * for, the locks taken inside them (and every write) still get theirs: no starvation, no deadlock.
   */
  outer?: boolean;
  /**
   * Whose an outer lock is (a developer, as `HostDatabase.shareOf` names them): where outer locks
   * take a few connections shared by every tenant, one owner holds at most one of them at a time,
   * the rest waiting their turn without one (a developer's three long migrations held all three
   * for their whole run, and every other developer's deploys, deletes and exports waited).
   */
  owner?: string;
  /**
   * Keys to read once the lock is held (seeing every write committed before it was granted); a
   * backend that can reads them in the round trip that takes the lock and gives their values to
   * `work`, otherwise `work` gets undefined and reads them itself.
   */
  read?: Buffer[];
}

/** Locks and messages among the processes that share a store (none for an embedded one). */
/**
 * What a bus delivers to its handlers when it may have missed broadcasts (it lost its listener
 * and listens again): anything may have changed, for every deployment (a host message,
 * host-message.ts).
 */
export const RESYNC_MESSAGE = '{"type":"resync"}';

/**
 * The `cause` of a store's failure that sent nothing to the store (a PostgreSQL server found
 * silent refuses calls before sending them): a commit that fails so wrote nothing.
 */
export const NOTHING_SENT: Error = Object.freeze(new Error("Nothing was sent to the database."));

/** What work under a lock taken only if it is free gives: its result, or that it did not run. */
export type IfFree<T> = { ran: true; value: T } | { ran: false };

export interface HostBus {
  /**
   * Runs `work` holding the lock `name` against every other process on the store (the caller
   * serializes within its own process). A backend whose locks can be lost midway (with the
   * connection holding one) gives `work` the lock's fence: writes passed it land only while the
   * lock is still held (lock-fence.ts).
   */
  lockAcrossProcesses<T>(
    name: string,
    work: (read?: Array<string | undefined>, fence?: LockFence) => Promise<T>,
    options?: LockOptions,
  ): Promise<T>;
  /**
   * As {@link lockAcrossProcesses}, but only when no other process holds lock `name` now: `work`
   * does not run, and nothing waits for the lock, when one does. `work` gets the lock's fence.
   */
  lockAcrossProcessesIfFree<T>(name: string, work: FencedWork<T>, options?: LockOptions): Promise<IfFree<T>>;
  /**
   * Runs `work`, which takes a lock held for long (a deployment's write lock, held while its
   * mutations run), in a turn of `owner`'s (a developer's: `HostDatabase.shareOf`). A backend
   * whose locks each hold a connection of a small pool shares them by turns as it shares snapshot
   * connections (at most three quarters to one owner, the last few for owners holding none); the
   * rest wait before taking anything, not even the lock in this process. Never around work that holds another lock meanwhile (a migration, an import: they
   * hold an outer lock), nor nested.
   */
  inOwnerTurn<T>(owner: string, work: () => Promise<T>): Promise<T>;
  /** Sends a message to every other process on the store. */
  broadcast(message: string): Promise<void>;
  /** Receives other processes' broadcasts; returns the unsubscribe function. */
  onBroadcast(handler: (message: string) => void): () => void;
}

/** A backend of the document database: storage, plus the bus of the processes sharing it. */
export interface KvStore {
  /** `classic-level` (embedded, one process) or `postgres` (shared by several hosts). */
  readonly kind: string;
  readonly supports: KvSupports;
  readonly bus: HostBus;
  get(key: Buffer): Promise<string | undefined>;
  getMany(keys: Buffer[]): Promise<Array<string | undefined>>;
  /** Walks the latest committed state. */
  iterate(options: KvIterateOptions): KvIterator;
  /**
   * A snapshot of the latest committed state. `owner` (whose work it is: the developer owning the
   * deployment, see `HostDatabase.shareOf`; "" for the host's own work) says whose it is: a backend
   * with few connections shares them fairly between owners.
   */
  snapshot(owner?: string, use?: SnapshotUse): Promise<KvSnapshot>;
  /**
   * A snapshot whose point in time may be as late as its first read (never earlier than this
   * call): for a reader whose reads need to agree with each other, not with the moment it started
   * (a handler). A backend where taking a snapshot costs a round trip takes it with the first read.
   */
  lazySnapshot(owner?: string): Promise<KvSnapshot>;
  /**
   * A lazy snapshot for a reader that never commits on it (a query). Readers made before a
   * snapshot's first read may share it: each still sees every write that landed before it was made.
   */
  readSnapshot(owner?: string): Promise<KvSnapshot>;
  /**
   * Writes every operation, or none. Each message of `announce` is broadcast to the other
   * processes once the write has landed (by a backend that can, with the write itself: never when
   * it fails, never lost when it lands), even when there are no operations: a change of shared
   * state they cache (a deployment's record) reaches them with the write that makes it.
   */
  batch(operations: KvOperation[], announce?: readonly string[], fence?: LockFence): Promise<void>;
  /**
   * Ends `snapshot` (unless `supports.commitKeepsSnapshot`) and writes `operations` atomically.
   * `announce`, if given, is broadcast to the other processes once the write has landed (by a
   * backend that can, with the write itself: never when it fails). With `fence` (of the lock the
   * write is made under, see `HostBus.lockAcrossProcesses`), here as in {@link batch} and
   * {@link commitAndContinue}, nothing is written unless that lock is still held: the write then
   * fails with `unavailable`, its cause `LOCK_LOST` (lock-fence.ts).
   */
  commit(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    announce?: string,
    fence?: LockFence,
  ): Promise<void>;
  /**
   * {@link commit}, then a snapshot taken after the write landed that has read `read` (a writer
   * that keeps the write lock for its next batch: the next group of a group commit). A backend
   * whose reads are round trips begins it and reads in the commit's own round trip; its
   * `tryGetSync` then answers those keys at once. If the commit fails, no snapshot is left open;
   * if it landed but the next snapshot could not be begun or read, it resolves with none (the
   * caller begins its own): it rejects only when the write may not have landed. The next snapshot
   * is `owner`'s (see {@link snapshot}).
   */
  commitAndContinue(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    announce: string | undefined,
    read: Buffer[],
    owner?: string,
    fence?: LockFence,
  ): Promise<KvSnapshot | undefined>;
  /** Deletes every key of `range`; with `fence`, only while the lock it is of is held (see {@link batch}). */
  clear(range: KvRange, fence?: LockFence): Promise<void>;
  close(): Promise<void>;
}

/** Every entry of an iterator, then closes it. */
/**
 * Whether `view` (a snapshot, or the store's latest state) holds any key under `prefix`: one key
 * read at most, never a value (a row may take megabytes).
 */
export async function hasKeyUnder(view: Pick<KvSnapshot, "iterate">, prefix: Buffer): Promise<boolean> {
  const iterator = view.iterate({ gte: prefix, lt: afterPrefix(prefix), values: false, limit: 1 });
  try {
    return (await iterator.next(1)).length > 0;
  } finally {
    await iterator.close();
  }
}

export async function collect(iterator: KvIterator, batch = 1000): Promise<Array<[Buffer, string]>> {
  const out: Array<[Buffer, string]> = [];
  try {
    for (;;) {
      const entries = await iterator.next(batch);
      if (entries.length === 0) return out;
      out.push(...entries);
    }
  } finally {
    await iterator.close();
  }
}
