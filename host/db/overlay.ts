import { createRequire } from "node:module";

/**
 * The B+ tree class of `sorted-btree`, a CommonJS module whose class is its `default` export;
 * required, so Node and the test runner's loader give the same object.
 */
const BTree = (createRequire(import.meta.url)("sorted-btree") as typeof import("sorted-btree")).default;
type BTreeOf<K, V> = InstanceType<typeof BTree<K, V>>;

/**
 * A transaction's pending writes, kept sorted by key so range reads can merge them with the
 * snapshot in order. `value === null` marks a delete.
 */
export interface OverlayEntry {
  key: Buffer;
  value: string | null;
}

/**
 * Sorted in-memory write buffer (a B+ tree: a mutation writing thousands of rows, each with its
 * index entries, once spent seconds of the host's main thread moving a sorted array's entries on
 * every insert). It knows which of its entries were written since it was created or forked: those
 * are a transaction's own writes.
 */
export class WriteOverlay {
  /** Entries written since creation or fork; made on the first write (most transactions read only). */
  private touched: Set<OverlayEntry> | undefined;

  constructor(
    private readonly entries: BTreeOf<Buffer, OverlayEntry> = new BTree<Buffer, OverlayEntry>(
      undefined,
      Buffer.compare,
    ),
  ) {}

  /**
   * A copy to write on top of: reads see every write of this one, and {@link written} lists only
   * the copy's own. (A group of mutations committed together: each sees the ones before it.) The
   * copy shares this one's tree until either writes (copy-on-write), so forking costs the same
   * however many writes the group holds; an entry the copy did not write is replaced, never
   * changed in place, so the two never see each other's later writes.
   */
  fork(): WriteOverlay {
    return new WriteOverlay(this.entries.clone());
  }

  /** The keys written since this overlay was created or forked, in key order. */
  written(): Buffer[] {
    const touched = this.touched;
    if (!touched) return [];
    // Every entry its own (no overlay it was forked from wrote): all the tree's keys, in order.
    if (touched.size === this.entries.size) return this.entries.keysArray();
    const keys: Buffer[] = [];
    // Sorting its own writes costs k log k comparisons, walking the whole tree one step per entry:
    // a group member's few writes on top of its group's are sorted, a large mutation's walked.
    if (touched.size * Math.log2(touched.size + 1) >= this.entries.size) {
      for (const entry of this.entries.valuesArray()) if (touched.has(entry)) keys.push(entry.key);
      return keys;
    }
    for (const entry of touched) keys.push(entry.key);
    return keys.sort(Buffer.compare);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Records a put (`value` a string) or a delete (`null`), replacing an earlier write of the key. */
  set(key: Buffer, value: string | null): void {
    const entry = this.entries.get(key);
    if (entry !== undefined && this.touched?.has(entry)) {
      entry.value = value;
      return;
    }
    // A new key, or one a forked-from overlay wrote (its entry is shared): a new entry of our own.
    const own = { key, value };
    this.entries.set(key, own);
    this.touched ??= new Set();
    this.touched.add(own);
  }

  /** Whether `entry` was written by this overlay's own transaction (not by one it was forked from). */
  isOwn(entry: OverlayEntry): boolean {
    return this.touched?.has(entry) === true;
  }

  /** The pending write of `key`: a string, `null` for a delete, `undefined` when untouched. */
  get(key: Buffer): string | null | undefined {
    return this.entries.get(key)?.value;
  }

  /** Whether a pending write has `start <= key < end`. */
  hasInRange(start: Buffer, end: Buffer): boolean {
    if (this.entries.size === 0 || Buffer.compare(start, end) >= 0) return false;
    const first = this.entries.getPairOrNextHigher(start);
    return first !== undefined && Buffer.compare(first[0], end) < 0;
  }

  /**
   * Pending writes with `start <= key < end`, in key order (`reverse`: the other way), one at a
   * time, as they were when it was called (later writes go to a copy of the tree's path): a scan
   * that stops early walks only what it passed. Copying the range first cost a mutation's every
   * `first()` all of its writes in the range (4,000 scans of 4,000 writes: 2.5 s).
   */
  *walk(start: Buffer, end: Buffer, reverse: boolean): Generator<OverlayEntry> {
    if (this.entries.size === 0 || Buffer.compare(start, end) >= 0) return;
    const frozen = this.entries.clone();
    if (!reverse) {
      for (const [key, entry] of frozen.entries(start)) {
        if (Buffer.compare(key, end) >= 0) return;
        yield entry;
      }
      return;
    }
    for (const [key, entry] of frozen.entriesReversed(end, undefined, true)) {
      if (Buffer.compare(key, start) < 0) return;
      yield entry;
    }
  }

  /** Every pending write in key order, one at a time (the overlay must not be written meanwhile). */
  each(): IterableIterator<OverlayEntry> {
    return this.entries.values();
  }
}
