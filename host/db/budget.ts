import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";

/** The read limits one handler runs under; tests and the budget harness may pass smaller ones. */
export interface BudgetLimits {
  rowsReturned: number;
  rowsRead: number;
  bytesRead: number;
  rangesRead: number;
  rangeBytesRead: number;
  rowsWritten: number;
  bytesWritten: number;
  referencesChecked: number;
}

/** The default per-handler limits of docs/limits.md. */
export const DEFAULT_BUDGET: BudgetLimits = {
  rowsReturned: LIMITS.rowsReturned,
  rowsRead: LIMITS.rowsRead,
  bytesRead: LIMITS.bytesRead,
  rangesRead: LIMITS.rangesRead,
  rangeBytesRead: LIMITS.rangeBytesRead,
  rowsWritten: LIMITS.rowsWritten,
  bytesWritten: LIMITS.bytesWritten,
  referencesChecked: LIMITS.referencesChecked,
};

/** No limit at all: the platform's own reads and writes (seeding a budget check, benchmarks). */
export const UNLIMITED_BUDGET: BudgetLimits = {
  rowsReturned: Number.MAX_SAFE_INTEGER,
  rowsRead: Number.MAX_SAFE_INTEGER,
  bytesRead: Number.MAX_SAFE_INTEGER,
  rangesRead: Number.MAX_SAFE_INTEGER,
  rangeBytesRead: Number.MAX_SAFE_INTEGER,
  rowsWritten: Number.MAX_SAFE_INTEGER,
  bytesWritten: Number.MAX_SAFE_INTEGER,
  referencesChecked: Number.MAX_SAFE_INTEGER,
};

/** What one handler used; reported with every execution. */
export interface BudgetUsage {
  rowsReturned: number;
  rowsRead: number;
  bytesRead: number;
  /** Gets and index scans so far: the entries of the handler's read set. */
  rangesRead: number;
  indexScans: number;
  writes: number;
}

/** Usage before anything was read or written (a fresh object each time). */
export function noUsage(): BudgetUsage {
  return { rowsReturned: 0, rowsRead: 0, bytesRead: 0, rangesRead: 0, indexScans: 0, writes: 0 };
}

/**
 * Per-handler read accounting on the host. Every scanned index entry is a row read, every row
 * handed to the handler a row returned; the messages are the documented ones (docs/capsules.md "Read budgets"). Once a limit is hit the
 * handler cannot read further even if it catches the error.
 */
export class Budget {
  readonly limits: BudgetLimits;
  readonly usage: BudgetUsage = noUsage();
  /** The first limit error raised; the transaction fails with it even if the handler caught it. */
  failure: PlatformError | undefined;
  /** Bytes stored so far, rows and their index entries (the call log counts the writes only). */
  private bytesWritten = 0;
  /** The bytes of the keys and bounds of the gets and index scans so far (see `usage.rangesRead`). */
  private rangeBytesRead = 0;
  /** `id()` values its writes checked exist so far. */
  private referencesChecked = 0;
  /** Entries scans passed that earlier members of the group commit deleted (see {@link hidden}). */
  private hiddenByGroup = 0;

  constructor(limits: BudgetLimits = DEFAULT_BUDGET) {
    this.limits = limits;
  }

  /** Rows that may still be read before the rowsRead limit. */
  get remainingReads(): number {
    return this.limits.rowsRead - this.usage.rowsRead;
  }

  /** Rows that may still be returned before the rowsReturned limit. */
  get remainingReturns(): number {
    return this.limits.rowsReturned - this.usage.rowsReturned;
  }

  /**
   * Counts one index scan (a query terminal) of a range whose bounds take `bytes`, before it
   * reads: the range joins the read set, which a live query keeps and indexes whether or not the
   * scan finds anything.
   */
  scanned(bytes: number): void {
    this.watch(bytes);
    this.usage.indexScans++;
  }

  /** Counts one get by id of a key of `bytes` before it reads: the key joins the read set, found or not. */
  lookedUp(bytes: number): void {
    this.watch(bytes);
  }

  private watch(bytes: number): void {
    if (this.usage.rangesRead >= this.limits.rangesRead) throw this.exceeded("rangesRead");
    if (this.rangeBytesRead + bytes > this.limits.rangeBytesRead) throw this.exceeded("rangeBytesRead");
    this.usage.rangesRead++;
    this.rangeBytesRead += bytes;
  }

  /**
   * Counts `n` references a write is about to check (`count` false: only fails when they would
   * not fit, for a check that may have to start again), failing when they would pass the limit.
   */
  checksReferences(n: number, count = true): void {
    if (this.referencesChecked + n > this.limits.referencesChecked) {
      this.referencesChecked = this.limits.referencesChecked;
      throw this.exceeded("referencesChecked");
    }
    if (count) this.referencesChecked += n;
  }

  /** Counts one scanned entry of `bytes` row bytes (0 for key-only scans). */
  read(bytes: number): void {
    if (this.usage.rowsRead >= this.limits.rowsRead) throw this.exceeded("rowsRead");
    if (this.usage.bytesRead + bytes > this.limits.bytesRead) {
      this.usage.bytesRead = this.limits.bytesRead;
      throw this.exceeded("bytesRead");
    }
    this.usage.rowsRead++;
    this.usage.bytesRead += bytes;
  }

  /**
   * Counts an entry a scan passed without returning it, hidden by a pending delete (`bytes`: the
   * value it hid). One the handler's own delete hides is a read: the host read it all the same.
   * One an earlier member of its group commit deleted is not the handler's doing: those are
   * bounded apart ({@link LIMITS.rowsHiddenByGroup}), and past it the handler fails `unavailable`
   * to be retried once that member's deletes are committed (its scans then no longer meet them).
   */
  readonly hidden = (bytes: number, own: boolean): void => {
    if (own) {
      this.read(bytes);
      return;
    }
    if (++this.hiddenByGroup > LIMITS.rowsHiddenByGroup)
      throw new PlatformError(
        "unavailable",
        `This mutation's scans passed more than ${LIMITS.rowsHiddenByGroup} rows that mutations committing with it deleted; retry it once they have committed.`,
      );
  };

  /** Counts `n` key-only reads at once (for `count()`), failing without counting when it would overflow. */
  readKeys(n: number): void {
    if (n > this.remainingReads) {
      this.usage.rowsRead = this.limits.rowsRead;
      throw this.exceeded("rowsRead");
    }
    this.usage.rowsRead += n;
  }

  /**
   * Counts one row written, storing `bytes` bytes with its index entries (0 for a delete). Every
   * write is held in memory until the commit, and each costs the host's main thread its index
   * entries' work, so a mutation's writes are bounded like its reads.
   */
  wrote(bytes: number): void {
    this.mayWrite();
    if (this.bytesWritten + bytes > this.limits.bytesWritten) {
      this.bytesWritten = this.limits.bytesWritten;
      throw this.exceeded("bytesWritten");
    }
    this.usage.writes++;
    this.bytesWritten += bytes;
  }

  /**
   * Counts `bytes` the host writes for the handler beside its rows (an idempotency key's record of
   * its answer), held in memory until the commit as rows are: bytes only, no row.
   */
  wroteBytes(bytes: number): void {
    if (this.bytesWritten + bytes > this.limits.bytesWritten) {
      this.bytesWritten = this.limits.bytesWritten;
      throw this.exceeded("bytesWritten");
    }
    this.bytesWritten += bytes;
  }

  /**
   * Throws when no further write fits: the write budget ran out already (a handler that started
   * thousands of writes without awaiting them gets the rest refused before any is built).
   */
  mayWrite(): void {
    if (this.usage.writes >= this.limits.rowsWritten) throw this.exceeded("rowsWritten");
    if (this.bytesWritten >= this.limits.bytesWritten) throw this.exceeded("bytesWritten");
  }

  /** Counts `n` rows handed to the handler. */
  returned(n: number): void {
    if (this.usage.rowsReturned + n > this.limits.rowsReturned) {
      this.usage.rowsReturned = this.limits.rowsReturned;
      throw this.exceeded("rowsReturned");
    }
    this.usage.rowsReturned += n;
  }

  /**
   * The error for `collect()` finding more rows than may be returned. Like the other limits it
   * leaves the usage at the limit crossed, so the call log and the metrics see which budget failed.
   */
  collectTooLarge(): PlatformError {
    this.usage.rowsReturned = this.limits.rowsReturned;
    return this.fail(`collect() exceeded the ${this.limits.rowsReturned} row return limit. Use paginate().`);
  }

  /** The error for crossing limit `name`, in the documented form. */
  exceeded(name: keyof BudgetLimits): PlatformError {
    return this.fail(`Database ${name} limit exceeded (${this.limits[name]}).`);
  }

  private fail(message: string): PlatformError {
    const error = new PlatformError("limit_exceeded", message);
    this.failure ??= error;
    return error;
  }
}
