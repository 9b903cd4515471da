import type pg from "pg";
import type { SnapshotUse } from "./kv.js";

/**
 * Who holds how many of a pool's connections, and whether an owner may take one more: one holding
 * none always may (when one is free); one holding fewer than its share (a quarter of the pool) only
 * while more than a few ({@link OwnerShares.spare}) are free; one holding its share or more only
 * while more than a share are free. One busy owner alone still uses three quarters of the pool, a
 * second then most of the rest, and the last few connections are for owners holding none; the
 * owners that wait are served the fewest-held first (postgres-parking.ts).
 */
export class OwnerShares {
  /** Which owner holds each connection lent out. */
  readonly holders = new Map<pg.ClientBase, string>();
  private readonly held = new Map<string, number>();
  private total = 0;
  readonly share: number;
  /** Connections kept for owners holding none, from owners holding fewer than a share. */
  readonly spare: number;

  constructor(private readonly size: number) {
    this.share = Math.max(1, Math.ceil(size / 4));
    this.spare = Math.max(1, Math.ceil(size / 16));
  }

  /** Connections `owner` holds now. */
  of(owner: string): number {
    return this.held.get(owner) ?? 0;
  }

  /**
   * Whether `owner` may take one more connection now, for a read or for a write. A write (see
   * `SnapshotUse`) goes past its owner's share, but never into the few kept for owners holding none.
   */
  mayTake(owner: string, use: SnapshotUse = "read"): boolean {
    const held = this.of(owner);
    if (held === 0) return true;
    const free = this.size - this.total;
    if (use === "write") return free > this.spare;
    return free > (held < this.share ? this.spare : this.share);
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
