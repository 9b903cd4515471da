/**
 * What a transaction read and wrote, in encoded keys. Live queries re-run a subscription only when
 * a commit's write set touches its read set (DESIGN.md section 4 "Reactivity").
 */
export interface ReadSet {
  /** Half-open ranges `[start, end)` scanned by queries. */
  ranges: Array<{ start: Buffer; end: Buffer }>;
  /** Keys read by `get`. */
  keys: Buffer[];
}

/** Creates an empty read set. */
export function emptyReadSet(): ReadSet {
  return { ranges: [], keys: [] };
}

/** True when any written key lies in a read range or equals a read key. */
export function readSetIntersects(readSet: ReadSet, written: readonly Buffer[]): boolean {
  for (const key of written) {
    for (const range of readSet.ranges) {
      if (Buffer.compare(key, range.start) >= 0 && Buffer.compare(key, range.end) < 0) return true;
    }
    for (const read of readSet.keys) if (read.equals(key)) return true;
  }
  return false;
}
