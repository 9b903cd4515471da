import { PlatformError } from "../../../sdk/values/index.js";
import type {
  HostBus,
  KvIterateOptions,
  KvIterator,
  KvOperation,
  KvRange,
  KvSnapshot,
  KvStore,
  KvSupports,
  SnapshotUse,
} from "./kv.js";
import type { LockFence } from "./lock-fence.js";

function misuse(message: string): PlatformError {
  return new PlatformError("internal", `Key-value store: ${message}`);
}

function requireKey(key: unknown, what = "a key"): void {
  if (!Buffer.isBuffer(key)) throw misuse(`${what} must be a Buffer.`);
}

function requireRange(range: KvRange): void {
  if (typeof range !== "object" || range === null) throw misuse("a range needs gte and lt.");
  requireKey(range.gte, "gte");
  requireKey(range.lt, "lt");
}

const BAD_OPERATION = "an operation is a put of a string value, a del, or an add of a whole number.";

function requireOperations(operations: KvOperation[]): void {
  if (!Array.isArray(operations)) throw misuse("a batch is an array of operations.");
  for (const op of operations) {
    requireKey(op?.key);
    const valid =
      op.type === "put"
        ? typeof op.value === "string"
        : op.type === "del" || (op.type === "add" && Number.isSafeInteger(op.delta));
    if (!valid) throw misuse(BAD_OPERATION);
  }
}

/**
 * A commit's operations, checked lightly (every mutation's path): an array, and whole-number adds
 * (a NaN or a fraction would otherwise be stored as a count that every later add refuses).
 */
function requireCommitOperations(operations: KvOperation[]): void {
  if (!Array.isArray(operations)) throw misuse("a commit takes an array of operations.");
  for (const op of operations)
    if (op.type === "add" && !Number.isSafeInteger(op.delta)) throw misuse(BAD_OPERATION);
}

/**
 * The base of every backend (abstract-level's pattern): the public methods check their arguments
 * once and leave out work that has none to do, then call a small hook the backend implements
 * (`_get`, `_batch`, ...). Snapshots are the backend's own objects; their reads are the hot path
 * and are not checked again.
 */
export abstract class KvStoreBase implements KvStore {
  abstract readonly kind: string;
  abstract readonly supports: KvSupports;
  abstract readonly bus: HostBus;

  protected abstract _get(key: Buffer): Promise<string | undefined>;
  /** `keys` is never empty. */
  protected abstract _getMany(keys: Buffer[]): Promise<Array<string | undefined>>;
  protected abstract _iterate(options: KvIterateOptions): KvIterator;
  protected abstract _snapshot(owner: string, use: SnapshotUse): Promise<KvSnapshot>;
  /**
   * `operations` is empty only when `announce` holds messages; those must reach the bus's other
   * processes once the write has landed (as {@link _commit}'s). A backend whose locks can be lost
   * checks `fence` with the write (see `KvStore.commit`); others need not look at it.
   */
  protected abstract _batch(
    operations: KvOperation[],
    announce: readonly string[],
    fence?: LockFence,
  ): Promise<void>;
  /**
   * `snapshot` came from this store's `snapshot()` or `lazySnapshot()`; `operations` may be empty.
   * `announce` must reach the bus's other processes once the write has landed (a store without
   * any, on the local bus, has no one to send it to). `fence` as {@link _batch}'s.
   */
  protected abstract _commit(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    announce?: string,
    fence?: LockFence,
  ): Promise<void>;
  protected abstract _clear(range: KvRange, fence?: LockFence): Promise<void>;
  protected abstract _close(): Promise<void>;

  async get(key: Buffer): Promise<string | undefined> {
    requireKey(key);
    return this._get(key);
  }

  async getMany(keys: Buffer[]): Promise<Array<string | undefined>> {
    if (!Array.isArray(keys)) throw misuse("getMany takes an array of keys.");
    for (const key of keys) requireKey(key);
    return keys.length === 0 ? [] : this._getMany(keys);
  }

  iterate(options: KvIterateOptions): KvIterator {
    requireRange(options);
    if (options.limit !== undefined && !(Number.isSafeInteger(options.limit) && options.limit >= 0))
      throw misuse("limit must be a whole number >= 0.");
    return this._iterate(options);
  }

  snapshot(owner = "", use: SnapshotUse = "read"): Promise<KvSnapshot> {
    return this._snapshot(owner, use);
  }

  lazySnapshot(owner = ""): Promise<KvSnapshot> {
    return this._lazySnapshot(owner);
  }

  /** A backend whose snapshots cost nothing to take keeps this: a lazy one is a plain one. */
  protected _lazySnapshot(owner: string): Promise<KvSnapshot> {
    return this._snapshot(owner, "write");
  }

  readSnapshot(owner = ""): Promise<KvSnapshot> {
    return this._readSnapshot(owner);
  }

  /** A backend that does not share readers' snapshots keeps this: a reader's is a lazy one. */
  protected _readSnapshot(owner: string): Promise<KvSnapshot> {
    return this._lazySnapshot(owner);
  }

  async batch(operations: KvOperation[], announce: readonly string[] = [], fence?: LockFence): Promise<void> {
    requireOperations(operations);
    if (operations.length > 0 || announce.length > 0) await this._batch(operations, announce, fence);
  }

  /** A mutation's commit: checked lightly (it is on every mutation's path), then the backend's. */
  async commit(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    announce?: string,
    fence?: LockFence,
  ): Promise<void> {
    requireCommitOperations(operations);
    return this._commit(snapshot, operations, announce, fence);
  }

  async commitAndContinue(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    announce: string | undefined,
    read: Buffer[],
    owner = "",
    fence?: LockFence,
  ): Promise<KvSnapshot | undefined> {
    requireCommitOperations(operations);
    for (const key of read) requireKey(key);
    return this._commitAndContinue(snapshot, operations, announce, read, owner, fence);
  }

  /**
   * By default: the commit, then a lazy snapshot that reads `read` (together, in one tick). Once
   * the commit has landed, a failure to begin or read the next snapshot fails nothing: there is
   * then none (the caller begins its own).
   */
  protected async _commitAndContinue(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    announce: string | undefined,
    read: Buffer[],
    owner: string,
    fence: LockFence | undefined,
  ): Promise<KvSnapshot | undefined> {
    await this._commit(snapshot, operations, announce, fence);
    let next: KvSnapshot | undefined;
    try {
      next = await this._lazySnapshot(owner);
      await Promise.all(read.map((key) => (next as KvSnapshot).get(key)));
      return next;
    } catch {
      await next?.close().catch(() => {});
      return undefined;
    }
  }

  async clear(range: KvRange, fence?: LockFence): Promise<void> {
    requireRange(range);
    await this._clear(range, fence);
  }

  close(): Promise<void> {
    return this._close();
  }
}
