/**
 * The queries open on each generation of a deployment's compiled schema. A query reads the
 * indexes of the schema it began with (a snapshot taken before a migration's switch holds a
 * new index half-built at most), so a migration clears the indexes it dropped only once the
 * queries of the schema before it have ended.
 */
export class SchemaReaders<G extends object> {
  private readonly open = new Map<G, { count: number; idle: Array<() => void> }>();

  /** A query began on `generation`. */
  enter(generation: G): void {
    const readers = this.open.get(generation);
    if (readers) readers.count++;
    else this.open.set(generation, { count: 1, idle: [] });
  }

  /** A query of `generation` ended. */
  leave(generation: G): void {
    const readers = this.open.get(generation);
    if (!readers || --readers.count > 0) return;
    this.open.delete(generation);
    for (const resolve of readers.idle) resolve();
  }

  /**
   * Resolves once no query reads `generation`, or after `waitMs` (a query ends within its
   * handler's wall time; whatever else reads that long is not waited for).
   */
  ended(generation: G, waitMs: number): Promise<void> {
    const readers = this.open.get(generation);
    if (!readers) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      readers.idle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
