import type { DeploymentRecord } from "./records.js";

/** Reads of a deployment's record after an announcement, the first and its retries (about 5 minutes in all). */
const RECHECK_ATTEMPTS = 12;

/**
 * Reads of deployment records after word that they changed (another host's announcement, or the
 * registry's check of the records' stamps). A read that fails (the database busy or away) is tried
 * again, later each time, up to {@link RECHECK_ATTEMPTS} times: left unhandled it would end the
 * host, and skipped it would leave a deleted deployment served here. One that gives up is kept for
 * {@link retryGivenUp} (the registry's next check). One chain of reads per id: word arriving while
 * one runs makes it read once more when it ends.
 */
export class RecordRechecks<Before> {
  private readonly running = new Map<string, { again: boolean }>();
  private readonly givenUp = new Set<string>();
  private stopped = false;

  constructor(
    private readonly read: (id: string) => Promise<DeploymentRecord | undefined>,
    /** What {@link settle} needs to know of `id` as of the moment its read begins. */
    private readonly begin: (id: string) => Before,
    /** Takes what the read of `id` found (undefined: no such deployment now). */
    private readonly settle: (id: string, record: DeploymentRecord | undefined, before: Before) => void,
    /** Told that the read `before` began with is over: settled, failed, or left once stopped. */
    private readonly end: (before: Before) => void = () => {},
  ) {}

  /** Reads `id`'s record (again, if a read of it is under way) and settles what it found. */
  run(id: string): void {
    if (this.stopped) return;
    this.givenUp.delete(id);
    const running = this.running.get(id);
    if (running) {
      running.again = true;
      return;
    }
    const chain = { again: false };
    this.running.set(id, chain);
    const read = (attempt: number): void => {
      if (this.stopped) {
        this.running.delete(id);
        return;
      }
      chain.again = false;
      const before = this.begin(id);
      this.read(id).then(
        (record) => {
          try {
            if (!this.stopped) this.settle(id, record, before);
          } catch (error) {
            // A listener's failure: reported, and the chain goes on (left, it answered no later word).
            console.error(`Taking deployment ${id}'s record read after word of a change failed:`, error);
          } finally {
            this.end(before);
            if (chain.again && !this.stopped) read(0);
            else this.running.delete(id);
          }
        },
        (error: unknown) => {
          this.end(before);
          if (this.stopped) {
            this.running.delete(id);
            return;
          }
          if (attempt === 0)
            console.error(`Reading deployment ${id} after word of a change failed; trying again:`, error);
          if (attempt + 1 >= RECHECK_ATTEMPTS) {
            console.error(
              `Gave up reading deployment ${id} after word of a change; the next check reads it.`,
            );
            this.running.delete(id);
            this.givenUp.add(id);
            return;
          }
          setTimeout(() => read(attempt + 1), Math.min(30_000, 500 * 2 ** attempt)).unref();
        },
      );
    };
    read(0);
  }

  /** Starts no read, and no retry, from now on (the host is closing). */
  stop(): void {
    this.stopped = true;
  }

  /** Reads again every record whose reads gave up. */
  retryGivenUp(): void {
    for (const id of [...this.givenUp]) this.run(id);
  }
}
