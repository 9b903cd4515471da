/**
 * What a host's start has started so far (its database, the deployments' isolates and their
 * records' stamp checks, the blob store's client, the servers), stopped again, newest first, when a
 * later step of the start fails: a host whose blob store could not be opened, or whose clean-up of
 * an interrupted import failed, left the stamps' unref'd timer querying a store nobody closed, the
 * store's connections and listener open, and the isolate pool's timers running.
 */
export class StartedParts {
  private readonly stops: Array<() => unknown> = [];

  /** Adds `stop`, run when a step after this one fails. */
  add(stop: () => unknown): void {
    this.stops.push(stop);
  }

  /**
   * Runs `start`; when it fails, stops every part added, newest first (a stop that fails too is
   * reported, and the others still run), then fails with `start`'s error.
   */
  async run<T>(start: () => Promise<T>): Promise<T> {
    try {
      return await start();
    } catch (error) {
      for (const stop of this.stops.splice(0).reverse())
        await Promise.resolve()
          .then(stop)
          .catch((failure: unknown) => console.error("Stopping a host that failed to start:", failure));
      throw error;
    }
  }
}
