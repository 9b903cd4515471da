import { PlatformError } from "../../sdk/values/index.js";

/**
 * One transfer of a kind at a time per developer on a host, refused (`409 conflict`), not queued,
 * while another runs. Imports: every upload is written to a temporary file of up to
 * `LIMITS.importArchiveBytes` before it is checked, so one developer's concurrent uploads could
 * fill the disk every tenant's data is on, and a queued one would be received first. Exports: each
 * holds a read snapshot (a PostgreSQL connection in an open transaction) for as long as its client
 * reads, and 21 unread exports took every snapshot connection of the host's own share. The
 * operator's transfers (and `platform dev`'s) are not limited.
 */
export class TransferTurns {
  private readonly running = new Set<string>();

  /** `busy`: what the refusal says (what runs already, and what to do). */
  constructor(private readonly busy: string) {}

  /**
   * Takes `developer`'s turn and answers the function that gives it back (call it once the
   * transfer is over); `409 conflict` at once while another of theirs runs. Without a developer, a
   * function that does nothing.
   */
  take(developer: string | undefined): () => void {
    if (developer === undefined) return () => {};
    if (this.running.has(developer)) throw new PlatformError("conflict", this.busy);
    this.running.add(developer);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.running.delete(developer);
    };
  }

  /** Runs `work` in `developer`'s turn (see {@link take}). */
  async run<T>(developer: string | undefined, work: () => Promise<T>): Promise<T> {
    const release = this.take(developer);
    try {
      return await work();
    } finally {
      release();
    }
  }
}
