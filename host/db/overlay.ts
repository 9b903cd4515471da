/**
 * A transaction's pending writes, kept sorted by key so range reads can merge them with the
 * snapshot in order. `value === null` marks a delete.
 */
export interface OverlayEntry {
  key: Buffer;
  value: string | null;
}

/**
 * Sorted in-memory write buffer with binary-search insertion. It knows which of its entries were
 * written since it was created or forked: those are a transaction's own writes.
 */
export class WriteOverlay {
  private readonly entries: OverlayEntry[] = [];
  /** Entries written since creation or fork; made on the first write (most transactions read only). */
  private touched: Set<OverlayEntry> | undefined;

  /**
   * A copy to write on top of: reads see every write of this one, and {@link written} lists only
   * the copy's own. (A group of mutations committed together: each sees the ones before it.)
   */
  fork(): WriteOverlay {
    const copy = new WriteOverlay();
    for (const entry of this.entries) copy.entries.push({ key: entry.key, value: entry.value });
    return copy;
  }

  /** The keys written since this overlay was created or forked, in key order. */
  written(): Buffer[] {
    const keys: Buffer[] = [];
    const touched = this.touched;
    if (touched) for (const entry of this.entries) if (touched.has(entry)) keys.push(entry.key);
    return keys;
  }

  get size(): number {
    return this.entries.length;
  }

  /** Index of the first entry whose key is >= `key`. */
  private lowerBound(key: Buffer): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (Buffer.compare((this.entries[mid] as OverlayEntry).key, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Records a put (`value` a string) or a delete (`null`), replacing an earlier write of the key. */
  set(key: Buffer, value: string | null): void {
    const at = this.lowerBound(key);
    let entry = this.entries[at];
    if (entry?.key.equals(key)) entry.value = value;
    else {
      entry = { key, value };
      this.entries.splice(at, 0, entry);
    }
    this.touched ??= new Set();
    this.touched.add(entry);
  }

  /** The pending write of `key`: a string, `null` for a delete, `undefined` when untouched. */
  get(key: Buffer): string | null | undefined {
    const entry = this.entries[this.lowerBound(key)];
    return entry?.key.equals(key) ? entry.value : undefined;
  }

  /** Pending writes with `start <= key < end`, in key order. */
  range(start: Buffer, end: Buffer): OverlayEntry[] {
    const from = this.lowerBound(start);
    const to = this.lowerBound(end);
    return from < to ? this.entries.slice(from, to) : [];
  }

  /** Every pending write in key order. */
  all(): readonly OverlayEntry[] {
    return this.entries;
  }
}
