import { ClientBytes } from "./client-bytes.js";

/** Something held for a client address that may be dropped to make room for others. */
export interface Holding {
  /** Bytes it holds now. */
  readonly bytes: number;
  /** False when it must not be dropped (a write's answer: its caller must learn the write happened). */
  readonly droppable: boolean;
  /** Stops counting it and closes its connection. */
  drop(): void;
}

/**
 * Bytes held for clients, per address and in all ({@link ClientBytes}), with what holds them, so
 * that once the host holds all it may, an address holding less than an even share is not refused:
 * the oldest holdings of the addresses holding the most are dropped for it. With a limit per
 * address only, enough addresses together (nine IPv4 ones, or an IPv6 client's /64s) filled the
 * host's whole share, and everyone else was refused for as long as they held on.
 */
export class FairShares {
  readonly held = new ClientBytes();
  private readonly holdings = new Map<string, Set<Holding>>();

  /** Counts `holding` as `key`'s (its bytes are added by the caller as they come, with {@link held}). */
  track(key: string, holding: Holding): void {
    let mine = this.holdings.get(key);
    if (!mine) {
      mine = new Set();
      this.holdings.set(key, mine);
    }
    mine.add(holding);
  }

  /** Stops counting `holding` as `key`'s. */
  untrack(key: string, holding: Holding): void {
    const mine = this.holdings.get(key);
    mine?.delete(holding);
    if (mine?.size === 0) this.holdings.delete(key);
  }

  /** Whether `key`, with `bytes` more, holds no more than `total` shared by every address holding something. */
  withinEvenShare(key: string, bytes: number, total: number): boolean {
    const holders = this.holdings.size + (this.holdings.has(key) ? 0 : 1);
    return this.held.of(key) + bytes <= total / holders;
  }

  /**
   * Drops the oldest droppable holdings of the addresses holding the most, as long as they hold
   * more than `key` would, until `bytes` more for `key` fit in `total`; drops none unless that is
   * enough. True when they fit now.
   */
  makeRoom(key: string, bytes: number, total: number): boolean {
    const need = this.held.total + bytes - total;
    const after = this.held.of(key) + bytes;
    // Every other address: what it would still hold, and its droppable holdings not chosen yet.
    const others = [...this.holdings]
      .filter(([other]) => other !== key)
      .map(([other, holdings]) => ({
        holds: this.held.of(other),
        droppable: [...holdings].filter((holding) => holding.droppable),
      }));
    const dropped: Holding[] = [];
    let freed = 0;
    while (freed < need) {
      let heaviest: (typeof others)[number] | undefined;
      for (const other of others)
        if (other.droppable.length > 0 && other.holds > after && other.holds > (heaviest?.holds ?? 0))
          heaviest = other;
      const holding = heaviest?.droppable.shift();
      if (!heaviest || !holding) return false;
      heaviest.holds -= holding.bytes;
      dropped.push(holding);
      freed += holding.bytes;
    }
    for (const holding of dropped) holding.drop();
    return true;
  }
}
