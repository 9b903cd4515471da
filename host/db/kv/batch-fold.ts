import { setImmediate as nextTurn } from "node:timers/promises";
import type { KvOperation } from "./kv.js";

/** A put or a del: what an add becomes once its stored count is known. */
export type SettledOperation = Exclude<KvOperation, { type: "add" }>;

/** The count a put stored, as an `add` reads it: a decimal integer. */
function countOf(value: string | undefined, key: Buffer): number {
  const n = Number(value ?? 0);
  if (!Number.isSafeInteger(n))
    throw new Error(`The value under key ${key.toString("hex")} is not a count: an add needs one.`);
  return n;
}

/** A count as the operation that stores it: a put of the sum, or a del at 0 or less. */
function storedCount(key: Buffer, n: number): SettledOperation {
  if (!Number.isSafeInteger(n))
    throw new Error(`The count under key ${key.toString("hex")} would leave the safe integers.`);
  return n > 0 ? { type: "put", key, value: String(n) } : { type: "del", key };
}

/** One key's operations in a batch: the last put or del (none: the stored value), then the adds after it. */
interface KeyFold {
  key: Buffer;
  set: SettledOperation | undefined;
  added: number | undefined;
}

/**
 * A batch's operations, one per key (in the order keys first appear), as applying them in order
 * would leave the key: the last put or del wins, and the adds after it move the count it left (a
 * put's count; 0 after a del) by their sum, 0 or less deleting the key. Adds that nothing in the
 * batch came before are left to the store as one add of their sum, which moves its stored count,
 * unless `stored` is given: it then reads the count there (a store that reads in process, under
 * its write lock) and the add becomes a put or a del. Only the sum counts, never a step between
 * (a batch is atomic: no one sees its steps), so every store folds a batch alike.
 */
export function foldBatch(
  operations: readonly KvOperation[],
  stored: (key: Buffer) => string | undefined,
): SettledOperation[];
export function foldBatch(operations: readonly KvOperation[]): KvOperation[];
export function foldBatch(
  operations: readonly KvOperation[],
  stored?: (key: Buffer) => string | undefined,
): KvOperation[] {
  const fold = new BatchFold();
  for (const op of operations) fold.add(op);
  const folded: KvOperation[] = [];
  for (const key of fold.keys()) folded.push(settleKey(key, stored));
  return folded;
}

/** Operations a large batch's steps (fold, settle, hand over) take per turn of the event loop. */
export const OPERATIONS_PER_TURN = 2_000;
/**
 * A batch of more operations than this is spread over turns of the event loop by the stores (an
 * import's: converting a million operations at once held the main thread 1.6 s; a mutation's
 * thousands of inserts into indexed tables: 195-258 ms).
 */
export const LARGE_BATCH = 4_000;

/**
 * {@link foldBatch} a few thousand operations per turn of the event loop, leaving the turns
 * between to other tenants' calls: a mutation of thousands of inserts into indexed tables makes
 * tens of thousands of operations, and folding them at once held the main thread for tens of ms.
 * `stored`, read as the keys are settled, must not change meanwhile (the caller holds the write lock).
 */
export function foldInTurns(
  operations: readonly KvOperation[],
  stored: (key: Buffer) => string | undefined,
): Promise<SettledOperation[]>;
export function foldInTurns(operations: readonly KvOperation[]): Promise<KvOperation[]>;
export async function foldInTurns(
  operations: readonly KvOperation[],
  stored?: (key: Buffer) => string | undefined,
): Promise<KvOperation[]> {
  const fold = new BatchFold();
  for (const [i, op] of operations.entries()) {
    fold.add(op);
    if (i % OPERATIONS_PER_TURN === OPERATIONS_PER_TURN - 1) await nextTurn();
  }
  const folded: KvOperation[] = [];
  for (const key of fold.keys()) {
    folded.push(settleKey(key, stored));
    if (folded.length % OPERATIONS_PER_TURN === 0) await nextTurn();
  }
  return folded;
}

/** A batch folded an operation at a time: `add` each in order, then {@link settleKey} each of its `keys`. */
class BatchFold {
  private readonly byKey = new Map<string, KeyFold>();

  /** The batch's next operation. */
  add(op: KvOperation): void {
    const id = op.key.toString("latin1");
    if (op.type !== "add") {
      this.byKey.set(id, { key: op.key, set: op, added: undefined });
      return;
    }
    let fold = this.byKey.get(id);
    if (fold === undefined) {
      fold = { key: op.key, set: undefined, added: undefined };
      this.byKey.set(id, fold);
    }
    fold.added = (fold.added ?? 0) + op.delta;
  }

  /** Each key's fold so far, in the order keys first appear: {@link settleKey} makes it an operation. */
  keys(): IterableIterator<KeyFold> {
    return this.byKey.values();
  }
}

/** One key's operation once its batch is folded; `stored` as in {@link foldBatch}. */
function settleKey({ key, set, added }: KeyFold, stored?: (key: Buffer) => string | undefined): KvOperation {
  if (added === undefined) return set as SettledOperation;
  if (set !== undefined) return storedCount(key, (set.type === "put" ? countOf(set.value, key) : 0) + added);
  if (stored) return storedCount(key, countOf(stored(key), key) + added);
  if (!Number.isSafeInteger(added))
    throw new Error(`The adds to key ${key.toString("hex")} sum past the safe integers.`);
  return { type: "add", key, delta: added };
}
