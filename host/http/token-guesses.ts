import type { Context } from "koa";
import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import { clientAddressKey } from "./client-address.js";
import { RequestQuota } from "./request-quota.js";

/**
 * Tokens a client address may try on the control plane: `LIMITS.dashboardSignInsPerMinute` a
 * minute, shared by dashboard sign-ins (right or wrong: each stores a session) and bearer tokens
 * the operator API, `/metrics` and `/v1/backup` refused. A wrong token may be a guess at the
 * operator's, which opens every tenant: `/v1/me` answered 2,569 wrong ones a second to one
 * connection (an attack review, 2026-12-06). Once an address has spent them, it is refused before
 * its token is looked at, a right one too, so a guess learns nothing until the minute refills.
 */
export class TokenGuesses {
  private readonly tries: RequestQuota;

  /** Per client address as `quota` tells addresses apart; none counted while quotas are off. */
  constructor(private readonly quota: RequestQuota) {
    this.tries = new RequestQuota(
      quota.enabled
        ? { burst: LIMITS.dashboardSignInsPerMinute, perSecond: LIMITS.dashboardSignInsPerMinute / 60 }
        : false,
    );
  }

  /** The key `ctx`'s client address counts under. */
  keyOf(ctx: Context): string {
    return clientAddressKey(this.quota.clientAddress(ctx.req));
  }

  /** Takes one try from `key`; false (nothing taken) when it has spent them all. */
  take(key: string): boolean {
    return this.tries.tryTake(key);
  }

  /** Whole seconds until `key` may try again (at least 1). */
  retryAfterSeconds(key: string): number {
    return this.tries.retryAfterSeconds(key);
  }

  /** Fails with `429 limit_exceeded` when `key` may not try a token now; takes nothing. */
  checkMayTry(key: string): void {
    if (this.tries.waitMs(key) === 0) return;
    const seconds = this.retryAfterSeconds(key);
    throw new PlatformError(
      "limit_exceeded",
      `Your address tried too many tokens: ${LIMITS.dashboardSignInsPerMinute} a minute, refused tokens and dashboard sign-ins together; retry in ${seconds} s.`,
      { retryAfterSeconds: seconds },
    );
  }
}
