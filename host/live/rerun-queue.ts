/**
 * One deployment's live-query runs: at most `limit` under way, the others waiting in order of
 * arrival. A commit that touches thousands of subscriptions then hands the deployment's call path
 * a few runs at a time instead of thousands at once: they stay within the deployment's share of
 * the host (the fair scheduler's lanes see no more than `limit` of them), its own calls are not
 * refused for a full call queue, and each subscription gets its turn in order.
 */
export class RerunQueue {
  private running = 0;
  private readonly waiting: Array<() => Promise<void>> = [];
  /** Index of the first waiting run (the array is compacted now and then, not shifted per run). */
  private head = 0;

  constructor(private readonly limit: number) {}

  /** Runs waiting or under way. */
  get size(): number {
    return this.running + this.waiting.length - this.head;
  }

  /** Starts `run` when a place is free; its failure is its caller's to observe. */
  enqueue(run: () => Promise<void>): void {
    this.waiting.push(run);
    this.pump();
  }

  private pump(): void {
    while (this.running < this.limit && this.head < this.waiting.length) {
      const run = this.waiting[this.head] as () => Promise<void>;
      this.waiting[this.head] = noop;
      this.head++;
      this.running++;
      void run()
        .catch(() => {})
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
  }
}

const noop = async (): Promise<void> => {};
