/**
 * A counting semaphore: at most `slots` handlers execute at once on this host. With one handler at a
 * time per deployment, a single tenant can hold at most one slot, so it cannot starve the others.
 * Every call passes through it, so a free slot costs no extra turn: `work` starts at once.
 */
export class ConcurrencyLimiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly slots: number) {}

  /** Runs `work` when a slot is free; waiters start in the order they came. */
  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active < this.slots) {
      this.active++;
      return this.holding(work);
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => this.holding(work));
  }

  /** Runs `work` in a slot already taken, and passes the slot on when it settles. */
  private holding<T>(work: () => Promise<T>): Promise<T> {
    let result: Promise<T>;
    try {
      result = work();
    } catch (error) {
      this.release();
      return Promise.reject(error);
    }
    return result.then(
      (value) => {
        this.release();
        return value;
      },
      (error: unknown) => {
        this.release();
        throw error;
      },
    );
  }

  /** Hands the slot to the first waiter (so no newcomer takes it in between), or frees it. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }
}
