/**
 * A FIFO async mutex. One per deployment: mutations and migrations hold it, so writes on one
 * deployment are serialized, while queries read snapshots without waiting.
 */
export class WriteLock {
  private tail: Promise<void> = Promise.resolve();

  /** Runs `work` once every earlier holder has finished; releases the lock however it ends. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const previous = this.tail;
    this.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    try {
      return await work();
    } finally {
      release();
    }
  }
}
