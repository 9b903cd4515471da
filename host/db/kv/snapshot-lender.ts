/** A store's point-in-time view, as the backend hands it out. */
export interface Closable {
  close(): Promise<void>;
}

/** One reader's use of a view: `release` once done (safe to call twice). */
export interface SnapshotLoan<S extends Closable> {
  readonly snapshot: S;
  release(): Promise<void>;
}

interface LentView<S> {
  readonly snapshot: S;
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
 * and while a write is in flight each reader takes its own.
 */
export class SnapshotLender<S extends Closable> {
  private shared: LentView<S> | undefined;
  private writesInFlight = 0;

  /** `take`: makes a new view of the latest committed state. */
  constructor(private readonly take: () => S) {}

  /** A view of the latest committed state for one reader. */
  borrow(): SnapshotLoan<S> {
    // During a write, a view of the reader's own: retired from the start, closed on release.
    if (this.writesInFlight > 0) return loanOf({ snapshot: this.take(), readers: 1, retired: true });
    let view = this.shared;
    if (!view) {
      view = { snapshot: this.take(), readers: 0, retired: false };
      this.shared = view;
    }
    view.readers++;
    return loanOf(view);
  }

  /** Runs `write`, which changes the store: readers from now on see its outcome, not an older view. */
  async writing<T>(write: () => Promise<T>): Promise<T> {
    this.writesInFlight++;
    this.retire();
    try {
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

/** One reader's hold on `view` (counted in `view.readers`); the last release of a retired view closes it. */
function loanOf<S extends Closable>(view: LentView<S>): SnapshotLoan<S> {
  let released = false;
  return {
    snapshot: view.snapshot,
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
