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

  /** How many hold the lock or wait for it. */
  get userCount(): number {
    return this.users;
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

/**
 * Locks by name, each a {@link WriteLock} made when first asked for and forgotten once idle:
 * names come and go (a deployment's, an owner's, an address's), and a lock is not kept for them.
 */
export class NamedLocks {
  private readonly locks = new Map<string, WriteLock>();

  private lockOf(name: string): WriteLock {
    const lock = this.locks.get(name) ?? new WriteLock();
    this.locks.set(name, lock);
    return lock;
  }

  private forgetIfIdle(name: string, lock: WriteLock): void {
    if (lock.idle && this.locks.get(name) === lock) this.locks.delete(name);
  }

  /** Runs `work` holding lock `name` (see {@link WriteLock.run}). */
  run<T>(name: string, work: () => Promise<T>): Promise<T> {
    const lock = this.lockOf(name);
    return lock.run(work).finally(() => this.forgetIfIdle(name, lock));
  }

  /** How many hold lock `name` or wait for it (0 when it is free). */
  usersOf(name: string): number {
    return this.locks.get(name)?.userCount ?? 0;
  }

  /** The first of `names` someone holds or waits for; undefined when all are free. */
  busyOf(names: readonly string[]): string | undefined {
    return names.find((name) => this.locks.get(name)?.idle === false);
  }

  /**
   * Takes every lock of `names` at once when all are free, returning what releases them (once);
   * undefined, taking none, when one is held or waited for.
   */
  tryHoldAll(names: readonly string[]): (() => void) | undefined {
    if (this.busyOf(names) !== undefined) return undefined;
    const held = names.map((name) => {
      const lock = this.lockOf(name);
      return { name, lock, release: lock.tryHold() as () => void };
    });
    return () => {
      for (const { name, lock, release } of held) {
        release();
        this.forgetIfIdle(name, lock);
      }
    };
  }
}
