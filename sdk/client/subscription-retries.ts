import type { ErrorCode } from "../values/index.js";

/** Waits before subscribing again: 1 s doubling to 30 s, or what the host asked, with jitter. */
const RETRY = { firstMs: 1000, maxMs: 30_000 } as const;

/**
 * Errors of a subscription that may pass if it subscribes again later: the host refused or ended
 * it for want of room or quota (`unavailable`, `limit_exceeded`), or its query could not run then.
 * The host runs a live query again only when the data it read changes: without subscribing again,
 * such an error would stay until the page reloads.
 */
export function passes(code: ErrorCode): boolean {
  return code === "unavailable" || code === "limit_exceeded";
}

/**
 * The timers of subscriptions waiting to subscribe again, one per subscription, each after its own
 * back-off (reset by a value).
 */
export class SubscriptionRetries<Key> {
  private readonly waiting = new Map<Key, ReturnType<typeof setTimeout>>();
  private readonly attempts = new Map<Key, number>();

  /**
   * Calls `again` once after the host's `retryAfterSeconds` (when given) or the back-off, unless
   * `key` waits already.
   */
  schedule(key: Key, retryAfterSeconds: number | undefined, again: () => void): void {
    if (this.waiting.has(key)) return;
    const attempts = this.attempts.get(key) ?? 0;
    this.attempts.set(key, attempts + 1);
    const base =
      retryAfterSeconds !== undefined && retryAfterSeconds > 0
        ? retryAfterSeconds * 1000
        : Math.min(RETRY.maxMs, RETRY.firstMs * 2 ** attempts);
    // Never sooner than asked; spread so that the clients refused together do not come back together.
    const timer = setTimeout(
      () => {
        this.waiting.delete(key);
        again();
      },
      base * (1 + Math.random() / 2),
    );
    this.waiting.set(key, timer);
  }

  /** Stops `key`'s wait; `reset`: it answered, so its back-off starts over. */
  cancel(key: Key, reset: boolean): void {
    clearTimeout(this.waiting.get(key));
    this.waiting.delete(key);
    if (reset) this.attempts.delete(key);
  }

  /** Stops every wait (the socket subscribes everything again, or closes). */
  cancelAll(): void {
    for (const timer of this.waiting.values()) clearTimeout(timer);
    this.waiting.clear();
    this.attempts.clear();
  }
}
