import type { ClassicLevel } from "classic-level";
import { LIMITS } from "../../sdk/protocol/index.js";
import type { OverlayEntry, WriteOverlay } from "./overlay.js";

/** A classic-level database storing encoded keys and JSON values. */
export type Level = ClassicLevel<Buffer, string>;

/** An explicit classic-level snapshot. */
export type LevelSnapshot = ReturnType<Level["snapshot"]>;

/** Return `false` to stop the scan. */
export type Visit = (key: Buffer, value: string) => boolean;

/** How to scan one range. */
export interface ScanOptions {
  start: Buffer;
  end: Buffer;
  reverse: boolean;
  /** Key-only scans (for `count()`) never load values from the snapshot. */
  values: boolean;
  /** Expected number of entries, to size the first native batch. */
  hint: number;
}

const MAX_BATCH = 1000;
/**
 * How many bytes one native `nextv` may gather. classic-level's default (16 KiB) would split a page of
 * rows into many round trips; one handler cannot read more than the bytesRead budget anyway.
 */
const BATCH_BYTES = LIMITS.bytesRead;
const KEY_BATCH_BYTES = 256 * 1024;

/**
 * Scans `[start, end)` of a snapshot merged with a transaction's pending writes, in order, in
 * native batches (`nextv`) so a page of rows costs one round trip, not one per row. Pending
 * writes replace snapshot values; pending deletes hide them.
 */
export async function scanRange(
  level: Level,
  snapshot: LevelSnapshot,
  overlay: WriteOverlay,
  options: ScanOptions,
  visit: Visit,
): Promise<void> {
  const pending: OverlayEntry[] = overlay.size === 0 ? [] : overlay.range(options.start, options.end);
  if (options.reverse) pending.reverse();
  const before = options.reverse
    ? (a: Buffer, b: Buffer) => Buffer.compare(a, b) > 0
    : (a: Buffer, b: Buffer) => Buffer.compare(a, b) < 0;
  let next = 0;
  const iterator = level.iterator({
    gte: options.start,
    lt: options.end,
    reverse: options.reverse,
    snapshot,
    keys: true,
    values: options.values,
    highWaterMarkBytes: options.values ? BATCH_BYTES : KEY_BATCH_BYTES,
  });
  try {
    let size = Math.min(Math.max(options.hint, 1), MAX_BATCH);
    for (;;) {
      const batch = await iterator.nextv(size);
      if (batch.length === 0) break;
      for (const [key, value] of batch) {
        while (next < pending.length && before((pending[next] as OverlayEntry).key, key)) {
          const entry = pending[next++] as OverlayEntry;
          if (entry.value !== null && !visit(entry.key, entry.value)) return;
        }
        const same = pending[next];
        if (same?.key.equals(key)) {
          next++;
          if (same.value !== null && !visit(key, same.value)) return;
          continue;
        }
        if (!visit(key, value ?? "")) return;
      }
      size = MAX_BATCH;
    }
    while (next < pending.length) {
      const entry = pending[next++] as OverlayEntry;
      if (entry.value !== null && !visit(entry.key, entry.value)) return;
    }
  } finally {
    await iterator.close();
  }
}
