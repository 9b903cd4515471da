import { setImmediate as nextTurn } from "node:timers/promises";

/**
 * Hands the event loop back once a long piece of the host's own work has held it for a few
 * milliseconds: a migration's checks and index backfills walk a table's rows in batches of up to
 * 4 MiB, and one batch of wide rows held every tenant's calls 220-390 ms. Use as
 * `if (turns.due()) await turns.take();` per item, so items within the budget cost no await.
 */
export class TurnTaker {
  private since: number;

  /** `ms`: the share of the event loop between turns; `now`: the clock (ms). */
  constructor(
    private readonly ms = 8,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.since = now();
  }

  /** Whether the work has held the event loop for its share since the last turn. */
  due(): boolean {
    return this.now() - this.since >= this.ms;
  }

  /** A turn of the event loop for everyone else. */
  async take(): Promise<void> {
    await nextTurn();
    this.since = this.now();
  }
}
