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
  return n > 0 ? { type: "put", key, value: String(n) } : { type: "del", key };
}

/**
 * A batch's operations, one per key (in the order keys first appear), as applying them in order
 * would leave the key: the last put or del wins, and an add moves what came before it in the
 * batch (a put's count; 0 after a del). An add that nothing in the batch came before is left to
 * the store, which moves its stored count, unless `stored` is given: it then reads the count
 * there (a store that reads in process, under its write lock) and the add becomes a put or a del.
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
  const byKey = new Map<string, KvOperation>();
  for (const op of operations) {
    const id = op.key.toString("latin1");
    const before = byKey.get(id);
    if (op.type !== "add") byKey.set(id, op);
    else if (before === undefined) {
      byKey.set(id, stored ? storedCount(op.key, countOf(stored(op.key), op.key) + op.delta) : op);
    } else if (before.type === "add") {
      byKey.set(id, { type: "add", key: op.key, delta: before.delta + op.delta });
    } else {
      const base = before.type === "put" ? countOf(before.value, op.key) : 0;
      byKey.set(id, storedCount(op.key, base + op.delta));
    }
  }
  return [...byKey.values()];
}
