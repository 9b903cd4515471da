/** Reconnect delays: 100 ms doubling to 10 s, each with jitter. */
const BACKOFF = { firstMs: 100, maxMs: 10_000 } as const;

/**
 * How long a socket must stay open before the backoff starts over. Opening is not enough: a host
 * may accept the socket and close it at once (`1011` when its database lookup fails, `1008` over
 * a byte budget, `1013` for a slow consumer, or `1012`/`4001` from a host misbehaving), and a
 * backoff reset on open would make every client reconnect and subscribe again every 100 ms or
 * less, forever. A message from the host proves no more (it may send one and close), so only time
 * counts.
 */
export const STABLE_SOCKET_MS = 10_000;

/**
 * The sync connection's reconnect delays: each socket that closed before it stayed open
 * {@link STABLE_SOCKET_MS} (or never opened) doubles the next delay; one that stayed open that long
 * starts them over. Every way of reconnecting goes through it, a host restart's (1012) and a new
 * token's included: only after a socket that lived do they reconnect at once.
 */
export class ReconnectBackoff {
  /** Sockets in a row that did not stay open {@link STABLE_SOCKET_MS}. */
  private failures = 0;

  /** True when the last socket stayed open long enough (or none failed yet): no wait is due. */
  get healthy(): boolean {
    return this.failures === 0;
  }

  /**
   * A socket ended: `openedAt` is when it opened (null: it never did, or could not be made). True
   * when it stayed open long enough to count as a working connection.
   */
  ended(openedAt: number | null, now = Date.now()): boolean {
    const lived = openedAt !== null && now - openedAt >= STABLE_SOCKET_MS;
    this.failures = lived ? 0 : this.failures + 1;
    return lived;
  }

  /** How long to wait before the next socket: 100 ms doubling per failure up to 10 s, 50-100% of it. */
  delayMs(): number {
    const full = Math.min(BACKOFF.maxMs, BACKOFF.firstMs * 2 ** Math.max(0, this.failures - 1));
    return full * (0.5 + Math.random() / 2);
  }
}
