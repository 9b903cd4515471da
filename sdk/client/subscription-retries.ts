import type { ErrorCode } from "../values/index.js";

/** The longest wait a host may ask for before a subscription goes again (s): a bad value never stops it for good. */
const LONGEST_WAIT_S = 3600;

/**
 * When a subscription's error says to subscribe again (s), or undefined: a refusal or an ending
 * that passes with time (the app's subscriptions fill their room on the host, the request quota),
 * which the host marks with `retryAfterSeconds`. Other errors stay: the host runs a live query
 * again when the data it read changes, and a query over its read budget fails the same way again.
 */
export function retryAfterOf(code: ErrorCode, wire: unknown): number | undefined {
  if (code !== "unavailable" && code !== "limit_exceeded") return undefined;
  const asked = (wire as { retryAfterSeconds?: unknown } | null)?.retryAfterSeconds;
  if (typeof asked !== "number" || Number.isNaN(asked)) return undefined;
  return Math.min(LONGEST_WAIT_S, Math.max(1, asked));
}

/** The timers of subscriptions waiting to subscribe again, one per subscription. */
export class SubscriptionRetries<Key> {
  private readonly waiting = new Map<Key, ReturnType<typeof setTimeout>>();

  /**
   * Calls `again` once after `seconds`, and up to half as long again (so that the clients refused
   * together do not come back together), unless `key` waits already.
   */
  schedule(key: Key, seconds: number, again: () => void): void {
    if (this.waiting.has(key)) return;
    const timer = setTimeout(
      () => {
        this.waiting.delete(key);
        again();
      },
      seconds * 1000 * (1 + Math.random() / 2),
    );
    this.waiting.set(key, timer);
  }

  /** Stops `key`'s wait. */
  cancel(key: Key): void {
    clearTimeout(this.waiting.get(key));
    this.waiting.delete(key);
  }

  /** Stops every wait (the socket subscribes everything again, or closes). */
  cancelAll(): void {
    for (const timer of this.waiting.values()) clearTimeout(timer);
    this.waiting.clear();
  }
}
