import type pg from "pg";
import { NOT_READY, type NotReady } from "../fast-path.js";
import type { KeptScan, KvIterateOptions, KvIterator } from "./kv.js";
import { type PostgresScanMemos, pointRange, type ViewMemo } from "./postgres-scan-memos.js";
import { recordScan } from "./scan-memo.js";

/**
 * One read snapshot's share in the reads kept by view (postgres-scan-memos.ts): once its view is
 * named, what `owner`'s readers kept for it answers at once, and what this snapshot reads is kept.
 * Before it is named (or when its view is older than the latest seen), nothing is answered or kept.
 */
export class ViewReads {
  private memo: ViewMemo | undefined;

  constructor(
    private readonly memos: PostgresScanMemos,
    private readonly owner: string,
  ) {}

  /** Takes the view's name from `SNAPSHOT_NAME`'s rows (a standby's NULL names nothing). */
  named(rows: pg.QueryResultRow[] | undefined): void {
    const name = rows?.[0]?.name;
    if (typeof name === "string") this.memo = this.memos.memoOf(name);
  }

  /** The value of `key` kept for this view; else NOT_READY. */
  tryGet(key: Buffer): string | undefined | NotReady {
    const kept = this.memo?.points.lookup(this.owner, pointRange(key), 1) ?? NOT_READY;
    return kept === NOT_READY ? NOT_READY : kept.entries[0]?.[1];
  }

  /** Keeps a point read; true when it was kept already (a reader begun early would have had it at once). */
  keepPoint(key: Buffer, value: string | undefined): boolean {
    const memo = this.memo?.points;
    if (memo === undefined) return false;
    const range = pointRange(key);
    if (memo.keeps(this.owner, range, 1)) return true;
    memo.keepScan(this.owner, range, { entries: value === undefined ? [] : [[key, value]], complete: true });
    return false;
  }

  /** `scan`, kept for the view when it closes. */
  recording(options: KvIterateOptions, scan: KvIterator): KvIterator {
    return recordScan(() => this.memo?.scans, this.owner, options, scan);
  }

  /** A scan kept for this view; else NOT_READY. */
  tryScan(options: KvIterateOptions, want: number): KeptScan | NotReady {
    return this.memo?.scans.lookup(this.owner, options, want) ?? NOT_READY;
  }

  /** Whether a scan with `options` that took `entries` entries is kept for this view. */
  keeps(options: KvIterateOptions, entries: number): boolean {
    return this.memo?.scans.keeps(this.owner, options, entries) ?? false;
  }
}
