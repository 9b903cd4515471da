import type { ReadSet } from "../db/index.js";
import { type RangeHandle, RangeTree } from "./range-tree.js";

/** What one subscription put in the index, to take it out again. */
interface Entry {
  keys: string[];
  ranges: RangeHandle[];
}

/** An encoded key as a string that orders like its bytes (one char per byte). */
function asText(key: Buffer): string {
  return key.toString("latin1");
}

/**
 * The read sets of one deployment's subscriptions, indexed so that a commit finds the
 * subscriptions its written keys touch in about O(written keys x log(ranges) + hits) instead of
 * comparing every written key with every read set: keys read by `get` in a map, scanned ranges in
 * a {@link RangeTree}. It answers exactly what `readSetIntersects` would for each subscription
 * (test: read-set-index.test.ts). A subscription without a read set (none ran yet, or its run
 * failed before reading) is touched by every commit.
 */
export class ReadSetIndex<S> {
  private readonly keys = new Map<string, Set<S>>();
  private readonly ranges = new RangeTree<S>();
  /** Every subscription, with what it indexed (null: no read set, every commit touches it). */
  private readonly entries = new Map<S, Entry | null>();
  private readonly withoutReadSet = new Set<S>();

  /** Subscriptions held. */
  get size(): number {
    return this.entries.size;
  }

  /** Indexes `subscription` by `readSet` (undefined: touched by every commit), replacing its last one. */
  set(subscription: S, readSet: ReadSet | undefined): void {
    this.delete(subscription);
    if (!readSet) {
      this.entries.set(subscription, null);
      this.withoutReadSet.add(subscription);
      return;
    }
    const entry: Entry = { keys: [], ranges: [] };
    for (const key of readSet.keys) {
      const text = asText(key);
      let readers = this.keys.get(text);
      if (!readers) {
        readers = new Set();
        this.keys.set(text, readers);
      }
      if (!readers.has(subscription)) {
        readers.add(subscription);
        entry.keys.push(text);
      }
    }
    for (const range of readSet.ranges) {
      // An empty range contains no key: nothing to find it by.
      if (Buffer.compare(range.start, range.end) >= 0) continue;
      entry.ranges.push(this.ranges.insert(asText(range.start), asText(range.end), subscription));
    }
    this.entries.set(subscription, entry);
  }

  /** Forgets `subscription` (it ended). */
  delete(subscription: S): void {
    const entry = this.entries.get(subscription);
    if (entry === undefined) return;
    this.entries.delete(subscription);
    if (entry === null) {
      this.withoutReadSet.delete(subscription);
      return;
    }
    for (const text of entry.keys) {
      const readers = this.keys.get(text);
      readers?.delete(subscription);
      if (readers?.size === 0) this.keys.delete(text);
    }
    for (const handle of entry.ranges) this.ranges.remove(handle);
  }

  /**
   * The subscriptions a commit that wrote `written` touches; `written` undefined (a commit too
   * large to describe) touches all of them.
   */
  touched(written: readonly Buffer[] | undefined): Set<S> {
    if (!written) return new Set(this.entries.keys());
    const touched = new Set(this.withoutReadSet);
    const add = (subscription: S) => touched.add(subscription);
    for (const key of written) {
      const text = asText(key);
      const readers = this.keys.get(text);
      if (readers) for (const subscription of readers) touched.add(subscription);
      this.ranges.stab(text, add);
    }
    return touched;
  }
}
