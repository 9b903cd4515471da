/**
 * A FIFO async mutex. One per deployment: mutations and migrations hold it, so writes on one
 * deployment are serialized, while queries read snapshots without waiting.
 */
export class WriteLock {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;
  /** Holders and waiters: none left means the lock can be forgotten. */
  private users = 0;

  /**
   * True while someone waits for the lock: a holder that could go on holding it (group commit's
   * next group) lets them in first, so the lock stays first come, first served.
   */
  get contended(): boolean {
    return this.waiting > 0;
  }

  /** True while nobody holds the lock or waits for it: a map of locks by name may drop it. */
  get idle(): boolean {
    return this.users === 0;
  }

  /**
   * Takes the lock at once when it is idle and returns what releases it (once, however often it is
   * called); undefined, taking nothing, when someone holds it or waits for it.
   */
  tryHold(): (() => void) | undefined {
    if (!this.idle) return undefined;
    this.users++;
    let resolve!: () => void;
    this.tail = new Promise<void>((done) => {
      resolve = done;
    });
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.users--;
      resolve();
    };
  }

  /** Runs `work` once every earlier holder has finished; releases the lock however it ends. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    this.users++;
    let release!: () => void;
    const previous = this.tail;
    this.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.waiting++;
    try {
      await previous;
    } finally {
      this.waiting--;
    }
    try {
      return await work();
    } finally {
      this.users--;
      release();
    }
  }
}
