/**
 * Turns of a few places shared by owners, as snapshot connections are (owner-shares.ts): an owner
 * holding none may start while a place is free; one holding some only while more than `spare` are
 * free, and never more than `perOwner` at once. The rest wait, holding nothing, and a freed place
 * goes to the waiting owner holding the fewest (in arrival order among equals). The PostgreSQL bus
 * runs mutations' write locks through one (`HostBus.inOwnerTurn`): a deployment holds a lock
 * connection for as long as its mutations run, and without turns a developer's deployments (or
 * two developers') could hold every lock connection of the host while everyone else's writes wait.
 */
export class OwnerLimit {
  private readonly running = new Map<string, number>();
  private total = 0;
  private readonly waiting: Array<{ owner: string; start: () => void }> = [];

  constructor(
    readonly places: number,
    readonly perOwner: number,
    readonly spare: number,
  ) {}

  async run<T>(owner: string, work: () => Promise<T>): Promise<T> {
    // An owner's turns keep their order: behind one of its own that waits, a new one waits too.
    if (this.mayStart(owner) && !this.waiting.some((each) => each.owner === owner)) this.started(owner);
    else await new Promise<void>((start) => this.waiting.push({ owner, start }));
    try {
      return await work();
    } finally {
      this.ended(owner);
    }
  }

  /** Turns `owner` holds now (for tests and figures). */
  runningOf(owner: string): number {
    return this.running.get(owner) ?? 0;
  }

  private mayStart(owner: string): boolean {
    const held = this.runningOf(owner);
    if (held >= this.perOwner) return false;
    return this.total < (held === 0 ? this.places : this.places - this.spare);
  }

  private started(owner: string): void {
    this.running.set(owner, this.runningOf(owner) + 1);
    this.total++;
  }

  private ended(owner: string): void {
    const left = this.runningOf(owner) - 1;
    if (left > 0) this.running.set(owner, left);
    else this.running.delete(owner);
    this.total--;
    for (let next = this.nextWaiting(); next; next = this.nextWaiting()) {
      this.started(next.owner);
      next.start();
    }
  }

  /** Takes out the waiting turn to start next: of the first of each owner that may start, the one holding fewest. */
  private nextWaiting(): { owner: string; start: () => void } | undefined {
    let best = -1;
    const seen = new Set<string>();
    for (let i = 0; i < this.waiting.length; i++) {
      const { owner } = this.waiting[i] as { owner: string };
      if (seen.has(owner)) continue;
      seen.add(owner);
      if (!this.mayStart(owner)) continue;
      if (best < 0 || this.runningOf(owner) < this.runningOf((this.waiting[best] as { owner: string }).owner))
        best = i;
    }
    return best < 0 ? undefined : this.waiting.splice(best, 1)[0];
  }
}
