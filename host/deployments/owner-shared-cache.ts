/** What an {@link OwnerSharedCache} may keep: bytes in all, bytes of one owner, and entries. */
export interface OwnerSharedLimits {
  bytes: number;
  bytesPerOwner: number;
  entries: number;
}

/**
 * A least-recently-used cache of the host's memory shared by developers: each value counts its
 * bytes against the owner that kept it, and keeping one pushes out that owner's oldest while it
 * holds more than its share, then anyone's oldest while the whole is over its bytes or entries
 * (never the value just kept). A tenant asking for its own large values in a loop pushes out its
 * own, not every tenant's; a bound on entries alone let a few tenants' large ones fill the heap.
 */
export class OwnerSharedCache<V> {
  private readonly kept = new Map<string, { value: V; bytes: number; owner: string }>();
  private total = 0;
  private readonly byOwner = new Map<string, number>();

  constructor(private readonly limits: OwnerSharedLimits) {}

  /** The value under `key`, now the most recently used; undefined when not kept. */
  get(key: string): V | undefined {
    const found = this.kept.get(key);
    if (!found) return undefined;
    this.kept.delete(key);
    this.kept.set(key, found);
    return found.value;
  }

  /** Keeps `value` under `key` as `bytes` of `owner`'s, pushing out what no longer fits. */
  keep(key: string, value: V, bytes: number, owner: string): void {
    this.forget(key);
    this.kept.set(key, { value, bytes, owner });
    this.total += bytes;
    this.byOwner.set(owner, (this.byOwner.get(owner) ?? 0) + bytes);
    for (const [oldest, entry] of this.kept) {
      if ((this.byOwner.get(owner) ?? 0) <= this.limits.bytesPerOwner) break;
      if (oldest !== key && entry.owner === owner) this.forget(oldest);
    }
    for (const oldest of this.kept.keys()) {
      if (this.total <= this.limits.bytes && this.kept.size <= this.limits.entries) break;
      if (oldest !== key) this.forget(oldest);
    }
  }

  /** Drops the value under `key`, if kept. */
  forget(key: string): void {
    const entry = this.kept.get(key);
    if (!entry) return;
    this.kept.delete(key);
    this.total -= entry.bytes;
    const left = (this.byOwner.get(entry.owner) ?? 0) - entry.bytes;
    if (left > 0) this.byOwner.set(entry.owner, left);
    else this.byOwner.delete(entry.owner);
  }

  /** Drops every value whose key starts with `prefix` (a deleted deployment's). */
  forgetPrefix(prefix: string): void {
    for (const key of [...this.kept.keys()]) if (key.startsWith(prefix)) this.forget(key);
  }

  /** Bytes kept: counted against `owner`, or in all. */
  bytes(owner?: string): number {
    return owner === undefined ? this.total : (this.byOwner.get(owner) ?? 0);
  }

  /** Values kept. */
  get size(): number {
    return this.kept.size;
  }
}
