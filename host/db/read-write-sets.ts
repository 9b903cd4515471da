/**
 * What a transaction read and wrote, in encoded keys. Live queries re-run a subscription only when
 * a commit's write set touches its read set (docs/architecture.md "Live queries").
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

/** Read sets of failed runs, by the error they threw (see {@link keepReadSetOfFailure}). */
const readSetsOfFailures = new WeakMap<object, ReadSet>();

/**
 * Remembers what a run read before it threw `error`, so a live query that failed re-runs when
 * that data changes (and only then). Errors that are not objects cannot carry one.
 */
export function keepReadSetOfFailure(error: unknown, readSet: ReadSet): void {
  if (typeof error === "object" && error !== null) readSetsOfFailures.set(error, readSet);
}

/** What the failed run that threw `error` had read, or undefined when it never reached the data. */
export function readSetOfFailure(error: unknown): ReadSet | undefined {
  return typeof error === "object" && error !== null ? readSetsOfFailures.get(error) : undefined;
}
