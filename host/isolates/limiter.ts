/**
 * A counting semaphore: at most `slots` handlers execute at once on this host. With one handler at a
 * time per deployment, a single tenant can hold at most one slot, so it cannot starve the others.
 */
export class ConcurrencyLimiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly slots: number) {}

  /** Runs `work` when a slot is free. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.slots) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await work();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}
