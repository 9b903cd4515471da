import { isPlatformError } from "../values/index.js";

/** Waits between guest starts that failed: none after the first, then 1 s doubling to 1 min, with jitter. */
const WAIT = { firstMs: 1000, maxMs: 60_000 } as const;

/**
 * When a client without a token may try to start its guest again. The first load starts one once;
 * when that failed for a passing reason (the host unreachable or overloaded: `unavailable`,
 * `internal`, `limit_exceeded`), one network blip at page load made every later call anonymous
 * until the page reloaded. The next calls try again, spaced out so that a host that is down is
 * not asked by every call. A refusal the host meant (a restricted deployment's `forbidden`) is not
 * tried again by itself (`retryAuth()` still does).
 */
export class GuestRetries {
  private failures = 0;
  private notBefore = 0;
  private refused = false;

  /** Passes on the outcome of guest start `start`, noting it. */
  async track<T>(start: Promise<T>): Promise<T> {
    try {
      const issued = await start;
      this.succeeded();
      return issued;
    } catch (error) {
      this.failed(error);
      throw error;
    }
  }

  /** True when a guest start may be tried now. */
  due(now = Date.now()): boolean {
    return !this.refused && now >= this.notBefore;
  }

  /** A guest start failed with `error`. */
  failed(error: unknown, now = Date.now()): void {
    const passing =
      !isPlatformError(error) ||
      error.code === "unavailable" ||
      error.code === "internal" ||
      error.code === "limit_exceeded";
    if (!passing) {
      this.refused = true;
      return;
    }
    // The first failure (the load's) is tried again by the next call at once: a blip is short.
    const fullMs = this.failures === 0 ? 0 : Math.min(WAIT.maxMs, WAIT.firstMs * 2 ** (this.failures - 1));
    // The host's own word when it gave one (new guests from a shared address past its limit).
    const hostMs = isPlatformError(error) ? (error.retryAfterSeconds ?? 0) * 1000 : 0;
    this.notBefore = now + Math.max(hostMs, fullMs * (0.5 + Math.random() / 2));
    this.failures++;
  }

  /** A guest started: a later failure waits from the start again. */
  succeeded(): void {
    this.failures = 0;
    this.notBefore = 0;
    this.refused = false;
  }
}
