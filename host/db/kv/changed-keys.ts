import type { KvRange } from "./kv.js";

/** Keys one tracker follows one by one; past them it says that anything may have changed. */
const MOST_KEYS = 4096;
/** Cleared ranges it follows; past them, the same. */
const MOST_RANGES = 64;

/**
 * What the writes since a point in time changed: their keys and cleared ranges, so that the scans
 * a snapshot kept (scan-memo.ts) whose range none of them touches can be kept for the next one.
 * Past {@link MOST_KEYS} keys (an import, a migration) it stops following them and touches every
 * range.
 */
export class ChangedKeys {
  private keys: Buffer[] = [];
  private sorted = true;
  private ranges: KvRange[] = [];
  private everything = false;

  /** Notes a write of `keys`. */
  wrote(keys: Iterable<Buffer>): void {
    if (this.everything) return;
    for (const key of keys) {
      if (this.keys.length === MOST_KEYS || !Buffer.isBuffer(key)) {
        this.anything();
        return;
      }
      this.keys.push(key);
    }
    this.sorted = false;
  }

  /** Notes a write that may have changed anything. */
  anything(): void {
    this.everything = true;
    this.keys = [];
    this.ranges = [];
  }

  /** Notes that every key of `range` may have been deleted. */
  cleared(range: KvRange): void {
    if (this.everything) return;
    if (this.ranges.length === MOST_RANGES || !Buffer.isBuffer(range.gte) || !Buffer.isBuffer(range.lt))
      this.anything();
    else this.ranges.push(range);
  }

  /** True when a change noted lies in `[gte, lt)`. */
  touches(gte: Buffer, lt: Buffer): boolean {
    if (this.everything) return true;
    for (const range of this.ranges)
      if (Buffer.compare(range.gte, lt) < 0 && Buffer.compare(gte, range.lt) < 0) return true;
    if (!this.sorted) {
      this.keys.sort(Buffer.compare);
      this.sorted = true;
    }
    // The first key at or after `gte`, by binary search; the range holds it when it is before `lt`.
    let low = 0;
    let high = this.keys.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (Buffer.compare(this.keys[middle] as Buffer, gte) < 0) low = middle + 1;
      else high = middle;
    }
    return low < this.keys.length && Buffer.compare(this.keys[low] as Buffer, lt) < 0;
  }
}
