/**
 * At most `max` pieces of work at once per owner; the rest wait in arrival order, holding nothing.
 * The PostgreSQL bus runs a developer's mutations' write locks through one (`HostBus.inOwnerTurn`),
 * so that a developer's deployments mutating at once (each holding a lock connection for as long
 * as its mutations run) can never hold every lock connection of the host alone.
 */
export class OwnerLimit {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(readonly max: number) {}

  async run<T>(owner: string, work: () => Promise<T>): Promise<T> {
    const running = this.running.get(owner) ?? 0;
    if (running < this.max) this.running.set(owner, running + 1);
    else
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(owner);
        if (queue) queue.push(resolve);
        else this.waiting.set(owner, [resolve]);
      });
    try {
      return await work();
    } finally {
      this.done(owner);
    }
  }

  /** Owners with work running now (for tests and figures). */
  runningOf(owner: string): number {
    return this.running.get(owner) ?? 0;
  }

  /** One of `owner`'s ended: its place goes to the next of its waiting, if any. */
  private done(owner: string): void {
    const queue = this.waiting.get(owner);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(owner);
    if (next) {
      next();
      return;
    }
    const left = (this.running.get(owner) ?? 1) - 1;
    if (left > 0) this.running.set(owner, left);
    else this.running.delete(owner);
  }
}
