import { LIMITS } from "../../sdk/protocol/index.js";
import { ClientBytes } from "./client-bytes.js";

/** Something held for a client address that may be dropped to make room for others. */
export interface Holding {
  /** Bytes it holds now. */
  readonly bytes: number;
  /** False when it must not be dropped (a write's answer: its caller must learn the write happened). */
  readonly droppable: boolean;
  /** When it last moved (a byte read by its client, or arrived from it), on the shares' clock (ms). */
  movedAt(): number;
  /**
   * Looks whether it moved since the last look, for a holding that cannot tell when it moves (an
   * answer's bytes are read by the system at its own pace): the shares look every half
   * `LIMITS.heldStalledMs`, so that a first look long after it stopped does not take it for moving.
   */
  look?(): void;
  /** Stops counting it and closes its connection. */
  drop(): void;
}

/**
 * What a holding of `bytes` must move (be read, or arrive) between two looks a second apart to
 * count as moving: 1 KiB, or a 300th of it when larger (`LIMITS.heldMovingBytes`,
 * `heldMovingParts`): a large holding trickling slowly holds as much memory as a still one.
 */
export function movingBytes(bytes: number): number {
  return Math.max(LIMITS.heldMovingBytes, bytes / LIMITS.heldMovingParts);
}

/**
 * Bytes held for clients, per address and in all ({@link ClientBytes}), with what holds them, so
 * that once the host holds all it may, an address within an even share is not refused: holdings
 * of the addresses above an even share that have not moved for `LIMITS.heldStalledMs` are dropped
 * for it, heaviest address first, oldest first. With a limit per address only, enough addresses
 * together (nine IPv4 ones, or an IPv6 client's /64s) filled the host's whole share, and everyone
 * else was refused for as long as they held on. A transfer that moves, a write's answer and an
 * address within its share are never dropped: then the newcomer is refused, as before.
 */
export class FairShares {
  readonly held = new ClientBytes();
  private readonly holdings = new Map<string, Set<Holding>>();
  private looking: ReturnType<typeof setInterval> | undefined;

  /** `now`: the clock holdings' `movedAt` reads (ms). */
  constructor(readonly now: () => number = Date.now) {}

  /** Counts `holding` as `key`'s (its bytes are added by the caller as they come, with {@link held}). */
  track(key: string, holding: Holding): void {
    let mine = this.holdings.get(key);
    if (!mine) {
      mine = new Set();
      this.holdings.set(key, mine);
    }
    mine.add(holding);
    if (holding.look && !this.looking) {
      this.looking = setInterval(() => this.lookAtAll(), LIMITS.heldStalledMs / 2);
      this.looking.unref();
    }
  }

  private lookAtAll(): void {
    for (const mine of this.holdings.values()) for (const holding of mine) holding.look?.();
  }

  /** Stops counting `holding` as `key`'s. */
  untrack(key: string, holding: Holding): void {
    const mine = this.holdings.get(key);
    mine?.delete(holding);
    if (mine?.size === 0) this.holdings.delete(key);
    if (this.holdings.size === 0 && this.looking) {
      clearInterval(this.looking);
      this.looking = undefined;
    }
  }

  /** `total` shared by every address holding something, `key` counted among them. */
  private evenShare(key: string, total: number): number {
    return total / (this.holdings.size + (this.holdings.has(key) ? 0 : 1));
  }

  /** Whether `key`, with `bytes` more, holds no more than an even share of `total`. */
  withinEvenShare(key: string, bytes: number, total: number): boolean {
    return this.held.of(key) + bytes <= this.evenShare(key, total);
  }

  /**
   * Drops stalled droppable holdings of the addresses above an even share (heaviest first, oldest
   * first, none of an address once it is down to the share) until `bytes` more for `key` fit in
   * `total`; drops none unless that is enough. True when they fit now.
   */
  makeRoom(key: string, bytes: number, total: number): boolean {
    const need = this.held.total + bytes - total;
    const share = this.evenShare(key, total);
    const stalledBefore = this.now() - LIMITS.heldStalledMs;
    const over = [...this.holdings.keys()].filter((other) => other !== key && this.held.of(other) > share);
    const dropped: Holding[] = [];
    let freed = 0;
    for (const other of this.heaviestFirst(over)) {
      let holds = this.held.of(other);
      for (const holding of this.holdings.get(other) ?? []) {
        if (freed >= need || holds <= share) break;
        if (!holding.droppable || holding.movedAt() > stalledBefore) continue;
        dropped.push(holding);
        freed += holding.bytes;
        holds -= holding.bytes;
      }
      if (freed >= need) break;
    }
    if (freed < need) return false;
    for (const holding of dropped) holding.drop();
    return true;
  }

  /**
   * `keys`, heaviest first: the first found by one look at each, the rest sorted only if asked for.
   * One address mostly gives enough room; sorting them all at every admission to a full room took
   * 14-18 ms for 32,768 addresses (an IPv6 client's /64s), one look at each about 3 ms.
   */
  private *heaviestFirst(keys: string[]): Generator<string> {
    let top = 0;
    for (let i = 1; i < keys.length; i++)
      if (this.held.of(keys[i] as string) > this.held.of(keys[top] as string)) top = i;
    const first = keys.splice(top, 1);
    yield* first;
    yield* keys.sort((a, b) => this.held.of(b) - this.held.of(a));
  }
}
