import { LIMITS } from "../../sdk/protocol/index.js";
import type { ReadSet } from "../db/index.js";
import { type RangeHandle, RangeTree } from "./range-tree.js";

/** What one subscription put in the index, to take it out again (or keep it: see {@link ReadSetIndex.set}). */
interface Entry {
  /** Its keys, each once. */
  keys: string[];
  /** Its non-empty ranges, each with its end. */
  ranges: Array<{ handle: RangeHandle; end: string }>;
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
 * (test: read-set-index.test.ts), unless finding them would take more than its limits
 * ({@link LIMITS.liveCommitVisits}, {@link LIMITS.liveCommitChecks}): then every subscription. A subscription without a read set (none ran yet, or its run
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

  /**
   * Indexes `subscription` by `readSet` (undefined: touched by every commit), replacing its last
   * one. A re-run mostly reads what the run before it read: then the index is left as it is, since
   * taking thousands of ranges out and putting them back is the main thread's work for nothing.
   * Answers whether what it indexes changed.
   */
  set(subscription: S, readSet: ReadSet | undefined): boolean {
    if (!readSet) {
      this.delete(subscription);
      this.entries.set(subscription, null);
      this.withoutReadSet.add(subscription);
      return true;
    }
    const keys = [...new Set(readSet.keys.map(asText))];
    const ranges = unionOf(readSet.ranges);
    const last = this.entries.get(subscription);
    if (last && sameReads(last, keys, ranges)) return false;
    this.delete(subscription);
    for (const text of keys) {
      let readers = this.keys.get(text);
      if (!readers) {
        readers = new Set();
        this.keys.set(text, readers);
      }
      readers.add(subscription);
    }
    const entry: Entry = {
      keys,
      ranges: ranges.map(({ start, end }) => ({ handle: this.ranges.insert(start, end, subscription), end })),
    };
    this.entries.set(subscription, entry);
    return true;
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
    for (const { handle } of entry.ranges) this.ranges.remove(handle);
  }

  /**
   * The subscriptions a commit that wrote `written` touches; `written` undefined (a commit too
   * large to describe) touches all of them. Each written key is looked up among the keys read and
   * stabbed into the ranges; when the ranges found pass what checking each range against the
   * sorted written keys would cost (many keys, each in many subscriptions' ranges), it does that
   * instead: found by stabbing, 1,000 written keys in the ranges of 5,000 subscriptions are 5
   * million visits. Past {@link LIMITS.liveCommitVisits} stabbing and {@link LIMITS.liveCommitChecks}
   * checking, it answers every subscription.
   */
  touched(written: readonly Buffer[] | undefined): Set<S> {
    if (!written) return new Set(this.entries.keys());
    const touched = new Set(this.withoutReadSet);
    const texts = written.map(asText);
    for (const text of texts) {
      const readers = this.keys.get(text);
      if (readers) for (const subscription of readers) touched.add(subscription);
    }
    if (this.ranges.size === 0) return touched;
    const checks = this.ranges.size * Math.ceil(Math.log2(texts.length + 1));
    // Stabbing costs its hits and the nodes it walks; past the cheaper way's cost, or the limit, stop.
    let visits = Math.min(checks + texts.length, LIMITS.liveCommitVisits);
    const step = () => {
      if (--visits < 0) throw STABBED_ENOUGH;
    };
    const add = (subscription: S) => {
      step();
      touched.add(subscription);
    };
    try {
      for (const text of texts) this.ranges.stab(text, add, step);
      return touched;
    } catch (error) {
      if (error !== STABBED_ENOUGH) throw error;
    }
    // Finding them exactly would hold the main thread (every tenant's calls) too long: all of them.
    if (checks > LIMITS.liveCommitChecks) return new Set(this.entries.keys());
    texts.sort();
    for (const [subscription, entry] of this.entries)
      if (
        entry &&
        !touched.has(subscription) &&
        entry.ranges.some(({ handle, end }) => holdsOneOf(texts, handle.start, end))
      )
        touched.add(subscription);
    return touched;
  }
}

/** Thrown to stop stabbing (see {@link ReadSetIndex.touched}). */
const STABBED_ENOUGH = Symbol("stabbed enough");

/** Whether one of `sorted` (ascending) lies in `[start, end)`. */
function holdsOneOf(sorted: readonly string[], start: string, end: string): boolean {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((sorted[middle] as string) < start) low = middle + 1;
    else high = middle;
  }
  return low < sorted.length && (sorted[low] as string) < end;
}

/**
 * A read set's ranges as the fewest disjoint ones holding the same keys, in order: empty ones
 * dropped, overlapping and adjacent ones joined. A query may scan one range many times (4,000
 * `take(0)` of a whole table), and each copy was visited by every key a commit wrote in it.
 */
function unionOf(ranges: ReadSet["ranges"]): Array<{ start: string; end: string }> {
  const texts: Array<{ start: string; end: string }> = [];
  for (const range of ranges) {
    // An empty range contains no key: nothing to find it by.
    if (Buffer.compare(range.start, range.end) < 0)
      texts.push({ start: asText(range.start), end: asText(range.end) });
  }
  texts.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  const union: Array<{ start: string; end: string }> = [];
  for (const range of texts) {
    const last = union.at(-1);
    if (last && range.start <= last.end) {
      if (range.end > last.end) last.end = range.end;
    } else union.push(range);
  }
  return union;
}

/** True when `entry` holds exactly `keys` and `ranges`, in the same order. */
function sameReads(entry: Entry, keys: string[], ranges: Array<{ start: string; end: string }>): boolean {
  if (entry.keys.length !== keys.length || entry.ranges.length !== ranges.length) return false;
  for (let i = 0; i < keys.length; i++) if (entry.keys[i] !== keys[i]) return false;
  for (let i = 0; i < ranges.length; i++) {
    const held = entry.ranges[i] as Entry["ranges"][number];
    const range = ranges[i] as { start: string; end: string };
    if (held.handle.start !== range.start || held.end !== range.end) return false;
  }
  return true;
}
