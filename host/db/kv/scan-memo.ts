import { LIMITS } from "../../../sdk/protocol/index.js";
import { NOT_READY, type NotReady } from "../fast-path.js";
import type { ChangedKeys } from "./changed-keys.js";
import type { KvIterateOptions, KvIterator } from "./kv.js";

/** What one scan of a range found: its first entries, in order, and whether they are all of it. */
interface MemoEntry {
  readonly gte: Buffer;
  readonly lt: Buffer;
  readonly entries: ReadonlyArray<[Buffer, string]>;
  /** The scan reached the end of the range: no entry follows the last one. */
  readonly complete: boolean;
  /** Bytes it is charged. */
  readonly bytes: number;
}

/** Bytes a memo entry is charged beside its keys and values (the array, its tuples, the map entry). */
const ENTRY_OVERHEAD = 64;
/** A kept scan nobody read for this long (ms) is not passed on to the next snapshot's memo. */
const KEEP_UNREAD_MS = 1000;

/**
 * The scans made through one LevelDB snapshot, kept so the next scan of the same range through the
 * same snapshot is answered at once, inside the handler's entry into its isolate, instead of with a
 * native iterator and a turn of the event loop. A snapshot never changes, so a kept scan is exactly
 * what scanning again would find; the store lends one snapshot to every reader that starts between
 * two writes (snapshot-lender.ts), and the snapshot after them keeps the scans whose range no write
 * between them touched ({@link inherit}). Ranges are compiled under a deployment's own key prefix,
 * so one deployment's scans never answer another's. At most `limitBytes` of keys and values, and
 * `LIMITS.scanMemoScans` scans, are kept; scans past them are not.
 */
export class ScanMemo {
  private readonly scans = new Map<string, MemoEntry>();
  /** When each kept scan was made or last answered a reader (`performance.now()`). */
  private readonly readAt = new Map<string, number>();
  private bytes = 0;

  constructor(private readonly limitBytes: number) {}

  /**
   * The kept entries of a scan with `options` when they answer a reader that takes at most `want`
   * of them (all of the range, or at least `want`); otherwise {@link NOT_READY}.
   */
  lookup(options: KvIterateOptions, want: number): ReadonlyArray<[Buffer, string]> | NotReady {
    const name = memoName(options);
    const kept = name === undefined ? undefined : this.scans.get(name);
    if (kept === undefined || !(kept.complete || kept.entries.length >= want)) return NOT_READY;
    this.readAt.set(name as string, performance.now());
    return kept.entries;
  }

  /**
   * `iterator` (a scan with `options` through this memo's snapshot), keeping what it returns when it
   * closes, unless a longer scan of the same range is kept already or it does not fit.
   */
  recording(options: KvIterateOptions, iterator: KvIterator): KvIterator {
    const name = memoName(options);
    if (name === undefined) return iterator;
    // Undefined once the scan outgrew what the memo could keep: a long scan (an export, a
    // backfill) is not held in memory for nothing.
    let seen: Array<[Buffer, string]> | undefined = [];
    let complete = false;
    let bytes = ENTRY_OVERHEAD;
    return {
      next: async (max) => {
        const batch = await iterator.next(max);
        if (batch.length === 0) complete = true;
        if (seen === undefined) return batch;
        for (const entry of batch) {
          seen.push(entry);
          bytes += entry[0].length + entry[1].length + ENTRY_OVERHEAD;
        }
        if (bytes > this.limitBytes - this.bytes) seen = undefined;
        return batch;
      },
      close: async () => {
        await iterator.close();
        if (seen !== undefined)
          this.keep(
            name,
            { gte: options.gte, lt: options.lt, entries: seen, complete, bytes },
            performance.now(),
          );
      },
    };
  }

  /**
   * Keeps the scans of `earlier` (the memo of the snapshot before this one) whose range nothing in
   * `changed` touched and that were read lately: `changed` must hold every write between the two
   * snapshots, so such a range holds the same entries in both. Scans nobody reads go, making room.
   */
  inherit(earlier: ScanMemo, changed: ChangedKeys): void {
    const now = performance.now();
    for (const [name, entry] of earlier.scans) {
      const readAt = earlier.readAt.get(name) ?? 0;
      if (now - readAt <= KEEP_UNREAD_MS && !changed.touches(entry.gte, entry.lt))
        this.keep(name, entry, readAt);
    }
  }

  private keep(name: string, entry: MemoEntry, readAt: number): void {
    const before = this.scans.get(name);
    if (before !== undefined && (before.complete || before.entries.length >= entry.entries.length)) return;
    if (this.bytes + entry.bytes > this.limitBytes) return;
    if (before === undefined && this.scans.size >= LIMITS.scanMemoScans) return;
    // A shorter scan of the same range stays counted: a memo only grows until its snapshot goes.
    this.scans.set(name, entry);
    this.readAt.set(name, readAt);
    this.bytes += entry.bytes;
  }
}

/** The memo's name for a scan; undefined for one it does not keep (a scan with a limit of its own). */
function memoName(options: KvIterateOptions): string | undefined {
  if (options.limit !== undefined) return undefined;
  const flags = `${options.reverse === true ? "r" : "f"}${options.values === false ? "-" : "v"}${options.keys === false ? "-" : "k"}`;
  return `${flags}${options.gte.length}:${options.gte.toString("latin1")}${options.lt.toString("latin1")}`;
}
