import { LIMITS } from "../../../sdk/protocol/index.js";
import { NOT_READY, type NotReady } from "../fast-path.js";
import type { ChangedKeys } from "./changed-keys.js";
import type { KeptScan, KvIterateOptions, KvIterator } from "./kv.js";

interface MemoEntry extends KeptScan {
  readonly owner: string;
  readonly gte: Buffer;
  readonly lt: Buffer;
  /** Bytes it is charged to its owner. */
  readonly bytes: number;
}

/** Bytes a kept scan or entry is charged beside its keys and values (arrays, tuples, map entries). */
const ENTRY_OVERHEAD = 64;
/** Bytes a key returned as a Buffer is charged beside its bytes (the Buffer object and its view). */
const KEY_OVERHEAD = 96;
/** Scans whose bounds take more bytes than this together are not kept (their name would hold them again). */
const MOST_BOUND_BYTES = 1024;
/** A kept scan nobody read for this long (ms) answers no one, and is not passed on to the next snapshot. */
const KEEP_UNREAD_MS = 1000;

/** How many scans a memo keeps for one owner and for all, and their bytes for all. */
export interface MemoBounds {
  readonly ownerScans: number;
  readonly totalScans: number;
  readonly totalBytes: number;
}

const SCAN_BOUNDS: MemoBounds = {
  ownerScans: LIMITS.scanMemoScans,
  totalScans: LIMITS.scanMemoTotalScans,
  totalBytes: LIMITS.scanMemoTotalBytes,
};

/** What one owner's kept scans take. */
interface Share {
  bytes: number;
  scans: number;
}

/**
 * The scans made through one LevelDB snapshot, kept so the next scan of the same range through the
 * same snapshot is answered at once, inside the handler's entry into its isolate, instead of with a
 * native iterator and a turn of the event loop. A snapshot never changes, so a kept scan is exactly
 * what scanning again would find; the store lends one snapshot to every reader that starts between
 * two writes (snapshot-lender.ts), and the snapshot after them keeps the scans whose range no write
 * between them touched ({@link inherit}). Scans are kept per owner (the developer whose share of
 * the store the reader uses) and by exact range, which is under one deployment's prefix: no one is
 * answered from another owner's scans, and what one owner keeps (`LIMITS.scanMemoBytes`,
 * `LIMITS.scanMemoScans`) neither makes room for nor takes it from another, below the totals of
 * one snapshot (`LIMITS.scanMemoTotalScans`, `LIMITS.scanMemoTotalBytes`).
 */
export class ScanMemo {
  private readonly scans = new Map<string, MemoEntry>();
  /** When each kept scan was made or last answered a reader (`performance.now()`). */
  private readonly readAt = new Map<string, number>();
  private readonly shares = new Map<string, Share>();
  private totalBytes = 0;
  /** Set by {@link retire}: nothing is kept from then on. */
  private retired = false;
  /** When unread scans were last swept out (see {@link sweepUnread}). */
  private sweptAt = Number.NEGATIVE_INFINITY;

  /**
   * `ownerBytes`: what one owner's kept scans may take (tests use a small figure); `bounds`: the
   * other limits (a memo of point reads has its own: postgres-scan-memos.ts).
   */
  constructor(
    private readonly ownerBytes: number = LIMITS.scanMemoBytes,
    private readonly bounds: MemoBounds = SCAN_BOUNDS,
  ) {}

  /**
   * `owner`'s kept scan with `options` when it answers a reader that takes at most `want` entries
   * (all of the range, or at least `want`); otherwise {@link NOT_READY}.
   */
  lookup(owner: string, options: KvIterateOptions, want: number): KeptScan | NotReady {
    const name = memoName(owner, options);
    const kept = name === undefined ? undefined : this.scans.get(name);
    if (kept === undefined || name === undefined) return NOT_READY;
    const now = performance.now();
    if (now - (this.readAt.get(name) ?? 0) > KEEP_UNREAD_MS) {
      this.forget(name, kept);
      return NOT_READY;
    }
    if (!(kept.complete || kept.entries.length >= want)) return NOT_READY;
    this.readAt.set(name, now);
    return kept;
  }

  /**
   * `iterator` (`owner`'s scan with `options` through this memo's snapshot), keeping what it
   * returns when it closes, unless a longer scan of the same range is kept already or it does not
   * fit in the owner's share.
   */
  recording(owner: string, options: KvIterateOptions, iterator: KvIterator): KvIterator {
    return recordScan(() => this, owner, options, iterator);
  }

  /**
   * Whether {@link lookup} would answer a reader of `owner`'s scan with `options` that took
   * `entries` entries, without counting it as read (nothing changes).
   */
  keeps(owner: string, options: KvIterateOptions, entries: number): boolean {
    const name = memoName(owner, options);
    const kept = name === undefined ? undefined : this.scans.get(name);
    if (kept === undefined || name === undefined) return false;
    if (performance.now() - (this.readAt.get(name) ?? 0) > KEEP_UNREAD_MS) return false;
    return kept.complete || kept.entries.length >= entries;
  }

  /** Whether any scan of `owner` is kept here. */
  holdsAny(owner: string): boolean {
    return (this.shares.get(owner)?.scans ?? 0) > 0;
  }

  /** Bytes `owner` may still keep here. */
  room(owner: string): number {
    return Math.min(
      this.ownerBytes - (this.shares.get(owner)?.bytes ?? 0),
      this.bounds.totalBytes - this.totalBytes,
    );
  }

  /** Keeps a finished scan of `owner` with `options` (see {@link recordScan}). */
  keepScan(owner: string, options: KvIterateOptions, scan: KeptScan): void {
    const name = memoName(owner, options);
    if (name === undefined) return;
    let bytes = boundsBytes(options);
    for (const entry of scan.entries) bytes += entryBytes(entry);
    const entry = {
      owner,
      gte: options.gte,
      lt: options.lt,
      entries: scan.entries,
      complete: scan.complete,
      bytes,
    };
    this.keep(name, entry, performance.now());
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

  /**
   * Empties the memo for good: it keeps nothing more (its view was replaced by a later one, and
   * readers still on it would only fill memory nobody reads).
   */
  retire(): void {
    this.retired = true;
    this.scans.clear();
    this.readAt.clear();
    this.shares.clear();
    this.totalBytes = 0;
  }

  private keep(name: string, entry: MemoEntry, readAt: number): void {
    if (this.retired) return;
    const before = this.scans.get(name);
    if (before !== undefined && (before.complete || before.entries.length >= entry.entries.length)) return;
    if (!this.fits(entry, before) && !(this.sweepUnread() && this.fits(entry, before))) return;
    const share = this.shares.get(entry.owner) ?? { bytes: 0, scans: 0 };
    this.totalBytes += entry.bytes - (before?.bytes ?? 0);
    this.shares.set(entry.owner, {
      bytes: share.bytes - (before?.bytes ?? 0) + entry.bytes,
      scans: share.scans + (before === undefined ? 1 : 0),
    });
    this.scans.set(name, entry);
    this.readAt.set(name, readAt);
  }

  /** Whether `entry` (in place of `before`) fits its owner's share and the totals. */
  private fits(entry: MemoEntry, before: MemoEntry | undefined): boolean {
    const share = this.shares.get(entry.owner) ?? { bytes: 0, scans: 0 };
    const scans = share.scans + (before === undefined ? 1 : 0);
    const bytes = share.bytes - (before?.bytes ?? 0) + entry.bytes;
    if (bytes > this.ownerBytes || scans > this.bounds.ownerScans) return false;
    if (before === undefined && this.scans.size >= this.bounds.totalScans) return false;
    return this.totalBytes - (before?.bytes ?? 0) + entry.bytes <= this.bounds.totalBytes;
  }

  /**
   * Forgets every scan nobody read for {@link KEEP_UNREAD_MS} (they answer no one), so scans kept
   * and left unread, by one owner or many, never hold the room readers need; at most every quarter
   * of that time, so a full memo costs a walk over it rarely. True when it forgot any.
   */
  private sweepUnread(): boolean {
    const now = performance.now();
    if (now - this.sweptAt < KEEP_UNREAD_MS / 4) return false;
    this.sweptAt = now;
    let forgot = false;
    for (const [name, entry] of this.scans)
      if (now - (this.readAt.get(name) ?? 0) > KEEP_UNREAD_MS) {
        this.forget(name, entry);
        forgot = true;
      }
    return forgot;
  }

  private forget(name: string, entry: MemoEntry): void {
    this.scans.delete(name);
    this.readAt.delete(name);
    this.totalBytes -= entry.bytes;
    const share = this.shares.get(entry.owner);
    if (share) this.shares.set(entry.owner, { bytes: share.bytes - entry.bytes, scans: share.scans - 1 });
  }
}

/** Bytes a kept scan is charged beside its entries: the bounds are held twice, as Buffers and in its name. */
function boundsBytes(options: KvIterateOptions): number {
  return ENTRY_OVERHEAD + 2 * (options.gte.length + options.lt.length);
}

function entryBytes([key, value]: readonly [Buffer, string]): number {
  return ENTRY_OVERHEAD + (key.length > 0 ? KEY_OVERHEAD + key.length : 0) + value.length;
}

/**
 * The memo's name for `owner`'s scan; undefined for one it does not keep (a scan with a limit of
 * its own, or with long bounds).
 */
function memoName(owner: string, options: KvIterateOptions): string | undefined {
  if (options.limit !== undefined || options.gte.length + options.lt.length > MOST_BOUND_BYTES)
    return undefined;
  const flags = `${options.reverse === true ? "r" : "f"}${options.values === false ? "-" : "v"}${options.keys === false ? "-" : "k"}`;
  return `${owner.length}:${owner}${flags}${options.gte.length}:${options.gte.toString("latin1")}${options.lt.toString("latin1")}`;
}

/**
 * `iterator` (`owner`'s scan with `options`), keeping what it returns when it closes in the memo
 * `memo` answers then (none: nothing is kept). A store whose view is known only once its first read
 * is answered (PostgreSQL: postgres-scan-memos.ts) picks the memo late; until then the scan is held
 * to one owner's share.
 */
export function recordScan(
  memo: () => ScanMemo | undefined,
  owner: string,
  options: KvIterateOptions,
  iterator: KvIterator,
): KvIterator {
  if (memoName(owner, options) === undefined) return iterator;
  const room = () => memo()?.room(owner) ?? LIMITS.scanMemoBytes;
  // Undefined once the scan outgrew the owner's room: a long scan (an export, a backfill) is
  // not held in memory for nothing.
  let seen: Array<[Buffer, string]> | undefined = [];
  let complete = false;
  let bytes = boundsBytes(options);
  return {
    next: async (max) => {
      const batch = await iterator.next(max);
      if (batch.length === 0) complete = true;
      if (seen === undefined) return batch;
      for (const entry of batch) {
        seen.push(entry);
        bytes += entryBytes(entry);
      }
      if (bytes > room()) seen = undefined;
      return batch;
    },
    close: async () => {
      await iterator.close();
      if (seen !== undefined) memo()?.keepScan(owner, options, { entries: seen, complete });
    },
  };
}
