import type pg from "pg";

/**
 * Who holds how many of a pool's connections, and whether an owner may take one more: below its
 * share always, at or above it only while more than a reserve are free (the reserve is the share:
 * a quarter of the pool). One busy owner alone still uses three quarters of the pool; another
 * owner arriving then finds a quarter free at once, and the owners that wait are served the
 * fewest-held first (postgres-parking.ts).
 */
export class OwnerShares {
  /** Which owner holds each connection lent out. */
  readonly holders = new Map<pg.ClientBase, string>();
  private readonly held = new Map<string, number>();
  private total = 0;
  readonly share: number;

  constructor(private readonly size: number) {
    this.share = Math.max(1, Math.ceil(size / 4));
  }

  /** Connections `owner` holds now. */
  of(owner: string): number {
    return this.held.get(owner) ?? 0;
  }

  /** Whether `owner` may take one more connection now. */
  mayTake(owner: string): boolean {
    return this.of(owner) < this.share || this.size - this.total > this.share;
  }

  /** `owner` took a connection (its client is recorded in {@link holders} once it has one). */
  took(owner: string): void {
    this.held.set(owner, this.of(owner) + 1);
    this.total++;
  }

  /** `owner` gave one back, or never got the one it took. */
  gaveBack(owner: string): void {
    const left = this.of(owner) - 1;
    if (left > 0) this.held.set(owner, left);
    else this.held.delete(owner);
    this.total--;
  }

  /** `client` is back from whoever held it (nothing when nobody did). */
  released(client: pg.ClientBase): void {
    const owner = this.holders.get(client);
    if (owner === undefined) return;
    this.holders.delete(client);
    this.gaveBack(owner);
  }
}
