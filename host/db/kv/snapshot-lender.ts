import { ChangedKeys } from "./changed-keys.js";
import { ScanMemo } from "./scan-memo.js";

/** A store's point-in-time view, as the backend hands it out. */
export interface Closable {
  close(): Promise<void>;
}

/** One reader's use of a view: `release` once done (safe to call twice). */
export interface SnapshotLoan<S extends Closable> {
  readonly snapshot: S;
  /** The scans made through this view, shared by its readers (scan-memo.ts); none for a view of one reader's own. */
  readonly memo: ScanMemo | undefined;
  release(): Promise<void>;
}

interface LentView<S> {
  readonly snapshot: S;
  readonly memo: ScanMemo | undefined;
  readers: number;
  /** A write began after it was taken: no new reader gets it; closed when its last reader is done. */
  retired: boolean;
}

/**
 * Lends one snapshot to every reader that starts while no write has begun since it was taken.
 * Such readers would all see the same state, and taking a LevelDB snapshot per read costs more
 * than the read (a native handle, a finalizer, and about 1.4 KB of promises and bookkeeping per
 * query under load). Every write must run through {@link SnapshotLender.writing}: it retires the
 * shared view before the write starts, so a reader that starts later gets a view taken after it,
 * and while a write is in flight each reader takes its own. The next shared view keeps the scans of
 * the one before whose ranges the writes between them left alone (scan-memo.ts).
 */
export class SnapshotLender<S extends Closable> {
  private shared: LentView<S> | undefined;
  private writesInFlight = 0;
  /** The memo of the last shared view, and what every write since it began changed. */
  private before: { memo: ScanMemo; changed: ChangedKeys } | undefined;

  /** `take`: makes a new view of the latest committed state. */
  constructor(private readonly take: () => S) {}

  /** A view of the latest committed state for one reader. */
  borrow(): SnapshotLoan<S> {
    // During a write, a view of the reader's own: retired from the start, closed on release.
    if (this.writesInFlight > 0) return loanOf(this.view(1, true));
    let view = this.shared;
    if (!view) {
      view = this.view(0, false);
      this.shared = view;
      // No write is in flight: the view holds what the one before held, changed by those writes.
      if (this.before) view.memo?.inherit(this.before.memo, this.before.changed);
      this.before = undefined;
    }
    view.readers++;
    return loanOf(view);
  }

  private view(readers: number, retired: boolean): LentView<S> {
    // A view of one reader's own (taken during a write) is shared with no one: it keeps no scans.
    return {
      snapshot: this.take(),
      memo: retired ? undefined : new ScanMemo(),
      readers,
      retired,
    };
  }

  /**
   * Runs `write`, which changes the store: readers from now on see its outcome, not an older view.
   * `change` notes what it may change (its keys, a cleared range); without it, anything.
   */
  async writing<T>(write: () => Promise<T>, change?: (changed: ChangedKeys) => void): Promise<T> {
    this.writesInFlight++;
    try {
      const memo = this.shared?.memo;
      if (memo) this.before = { memo, changed: new ChangedKeys() };
      this.retire();
      if (this.before) noteChange(this.before.changed, change);
      return await write();
    } finally {
      this.writesInFlight--;
    }
  }

  /** Stops lending the current view; it closes once its readers are done (before the store closes). */
  retire(): void {
    const view = this.shared;
    if (!view) return;
    this.shared = undefined;
    view.retired = true;
    if (view.readers === 0) closeQuietly(view.snapshot);
  }
}

/** Notes what a write may change; anything, when it does not say or cannot. */
function noteChange(changed: ChangedKeys, change: ((changed: ChangedKeys) => void) | undefined): void {
  try {
    if (change) change(changed);
    else changed.anything();
  } catch (error) {
    changed.anything();
    throw error;
  }
}

/** One reader's hold on `view` (counted in `view.readers`); the last release of a retired view closes it. */
function loanOf<S extends Closable>(view: LentView<S>): SnapshotLoan<S> {
  let released = false;
  return {
    snapshot: view.snapshot,
    memo: view.memo,
    release: async () => {
      if (released) return;
      released = true;
      view.readers--;
      if (view.retired && view.readers === 0) await view.snapshot.close();
    },
  };
}

/**
 * Closes a view nobody reads any more. It can only fail when the store itself is closing, which
 * closes its views anyway, so there is nothing to report.
 */
function closeQuietly(snapshot: Closable): void {
  snapshot.close().catch(() => {});
}
