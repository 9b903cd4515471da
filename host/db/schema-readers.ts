import type { KvSnapshot, KvStore } from "./kv/index.js";

/**
 * The queries open on each generation of a deployment's compiled schema. A query reads the
 * indexes of the schema it began with (a snapshot taken before a migration's switch holds a
 * new index half-built at most), so a migration clears the indexes it dropped only once the
 * queries of the schema before it have ended.
 */
export class SchemaReaders<G extends object> {
  private readonly open = new Map<G, { count: number; idle: Array<() => void> }>();
  private readonly retired = new WeakSet<G>();

  /** `generation` is gone: what it named may be cleared. */
  retire(generation: G): void {
    this.retired.add(generation);
  }

  /** Whether `generation` is gone: a query still reading through it must start again. */
  isRetired(generation: G): boolean {
    return this.retired.has(generation);
  }

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

/**
 * A reader's snapshot (taken with its first read: its reads need to agree with each other only)
 * and the schema it reads through, `served()` when the snapshot was asked for: the snapshot is no
 * earlier than that, so it holds that schema's indexes whole. A switch while it was asked for:
 * asked again.
 */
export async function readSnapshotOnSchema<G>(
  store: KvStore,
  share: string,
  served: () => G,
): Promise<{ snapshot: KvSnapshot; tables: G }> {
  for (;;) {
    const tables = served();
    const snapshot = await store.readSnapshot(share);
    if (tables === served()) return { snapshot, tables };
    await snapshot.close();
  }
}
