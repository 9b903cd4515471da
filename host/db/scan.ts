import { PlatformError } from "../../sdk/values/index.js";
import { NOT_READY } from "./fast-path.js";
import type { KvSnapshot } from "./kv/index.js";
import type { OverlayEntry, WriteOverlay } from "./overlay.js";

/** Return `false` to stop the scan. */
export type Visit = (key: Buffer, value: string) => boolean;

/** How to scan one range. */
export interface ScanOptions {
  start: Buffer;
  end: Buffer;
  reverse: boolean;
  /** Key-only scans (for `count()`) never load values from the snapshot. */
  values: boolean;
  /**
   * Whether `visit` needs each entry's key (a page's cursor does). When it does not, and no pending
   * write lies in the range, the snapshot is scanned without keys and `visit` gets an empty one.
   */
  keys: boolean;
  /** Expected number of entries, to size the first native batch. */
  hint: number;
  /**
   * The most entries `visit` takes: it returns `false` at that one at the latest (Infinity when it
   * may take the whole range). A snapshot that kept as many of this range answers at once.
   */
  want: number;
  /**
   * Told of each entry the scan passes without visiting it (one a pending delete hides, with the
   * bytes of the value it hides, and whether the transaction's own delete hides it rather than an
   * earlier member's of its group commit), for the handler's budget: a mutation that deleted 4,000
   * rows and then asked for the first row 4,000 times walked 16 million hidden entries, 15 s of
   * the main thread, reading "no rows".
   */
  hidden?: (bytes: number, own: boolean) => void;
}

const MAX_BATCH = 1000;

/**
 * Scans `[start, end)` of a snapshot merged with a transaction's pending writes, in order. Pending
 * writes replace snapshot values; pending deletes hide them. Answered at once (undefined) when the
 * snapshot kept this scan (`KvSnapshot.tryScanSync`) and the transaction wrote nothing in the
 * range; otherwise in batches, so a page of rows costs one round trip to the store, not one per row.
 */
export function scanRange(
  snapshot: KvSnapshot,
  overlay: WriteOverlay,
  options: ScanOptions,
  visit: Visit,
): Promise<void> | undefined {
  const pending = overlay.hasInRange(options.start, options.end);
  if (!pending && snapshot.tryScanSync) {
    const kept = snapshot.tryScanSync(iterateOptions(options, false), options.want);
    if (kept !== NOT_READY) {
      for (const [key, value] of kept.entries) if (!visit(key, value)) return undefined;
      // A kept scan that stops before the range's end answers only a visitor that stops within it.
      if (!kept.complete)
        throw new PlatformError(
          "internal",
          `A scan took more entries than it said it would (${options.want}).`,
        );
      return undefined;
    }
  }
  return scanInBatches(
    snapshot,
    pending ? overlay.walk(options.start, options.end, options.reverse) : undefined,
    options,
    visit,
    overlay,
  );
}

function iterateOptions(options: ScanOptions, pendingWrites: boolean) {
  return {
    gte: options.start,
    lt: options.end,
    reverse: options.reverse,
    values: options.values,
    keys: options.keys || pendingWrites,
  };
}

/**
 * The pending writes of a scan's range, walked in its order, with the next one to merge in view
 * (none: the range has none).
 */
class PendingWalk {
  next: OverlayEntry | undefined;
  constructor(private readonly entries: Iterator<OverlayEntry> | undefined) {
    this.advance();
  }
  advance(): OverlayEntry | undefined {
    const current = this.next;
    this.next = this.entries?.next().value ?? undefined;
    return current;
  }
}

async function scanInBatches(
  snapshot: KvSnapshot,
  walk: Iterator<OverlayEntry> | undefined,
  options: ScanOptions,
  visit: Visit,
  overlay: WriteOverlay,
): Promise<void> {
  const pending = new PendingWalk(walk);
  const hidden = options.hidden;
  const before = options.reverse
    ? (a: Buffer, b: Buffer) => Buffer.compare(a, b) > 0
    : (a: Buffer, b: Buffer) => Buffer.compare(a, b) < 0;
  const iterator = snapshot.iterate(iterateOptions(options, walk !== undefined));
  try {
    let size = Math.min(Math.max(options.hint, 1), MAX_BATCH);
    for (;;) {
      const batch = await iterator.next(size);
      if (batch.length === 0) break;
      for (const [key, value] of batch) {
        while (pending.next && before(pending.next.key, key))
          if (!visitPending(pending.advance() as OverlayEntry, visit, overlay, hidden)) return;
        if (pending.next?.key.equals(key)) {
          const same = pending.advance() as OverlayEntry;
          if (same.value === null) hidden?.(value ? Buffer.byteLength(value) : 0, overlay.isOwn(same));
          else if (!visit(key, same.value)) return;
          continue;
        }
        if (!visit(key, value ?? "")) return;
      }
      size = MAX_BATCH;
    }
    for (let entry = pending.advance(); entry; entry = pending.advance())
      if (!visitPending(entry, visit, overlay, hidden)) return;
  } finally {
    await iterator.close();
  }
}

/** Visits a pending write the snapshot has no entry for (a delete is hidden); false to stop. */
function visitPending(
  entry: OverlayEntry,
  visit: Visit,
  overlay: WriteOverlay,
  hidden: ScanOptions["hidden"],
): boolean {
  if (entry.value !== null) return visit(entry.key, entry.value);
  hidden?.(0, overlay.isOwn(entry));
  return true;
}
