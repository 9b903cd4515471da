/** A read of one deployment's record under way (see {@link ReadGenerations}). */
export interface OpenRead {
  readonly id: string;
  /** The id's count of changes when the read began. */
  readonly changes: number;
  ended: boolean;
}

/**
 * Whether a read of a deployment's record may be kept: not when, while it was under way, the id
 * was announced changed or retired, or this host wrote it (this host hears no announcement of its
 * own writes, so an older read answering after one would put the older record back). Each id's
 * count of changes is kept only while a read of it is under way: a change with no read open
 * concerns no read. The registry kept a count for every id ever announced, for the host's life: an
 * attacker creating and deleting deployment ids grew every host's memory with each one.
 */
export class ReadGenerations {
  private readonly open = new Map<string, { reads: number; changes: number }>();

  /** Begins a read of `id`'s record; {@link end} it once it is settled (or failed). */
  begin(id: string): OpenRead {
    let entry = this.open.get(id);
    if (!entry) {
      entry = { reads: 0, changes: 0 };
      this.open.set(id, entry);
    }
    entry.reads++;
    return { id, changes: entry.changes, ended: false };
  }

  /** Reads `id`'s record with `read`, and hands it to `keep` unless `id` changed meanwhile. */
  async read<T>(id: string, read: () => Promise<T>, keep: (value: T) => void): Promise<T> {
    const open = this.begin(id);
    try {
      const value = await read();
      if (this.unchanged(open)) keep(value);
      return value;
    } finally {
      this.end(open);
    }
  }

  /** Marks `id` changed: no read of it under way now is kept. */
  changed(id: string): void {
    const entry = this.open.get(id);
    if (entry) entry.changes++;
  }

  /** Whether `read`'s id was not marked changed since it began (false once it ended). */
  unchanged(read: OpenRead): boolean {
    return !read.ended && this.open.get(read.id)?.changes === read.changes;
  }

  /** Ends `read` (again: nothing); the id's count goes with its last read. */
  end(read: OpenRead): void {
    if (read.ended) return;
    read.ended = true;
    const entry = this.open.get(read.id);
    if (entry && --entry.reads === 0) this.open.delete(read.id);
  }

  /** How many ids have reads under way (tests). */
  get size(): number {
    return this.open.size;
  }
}
