import { LIMITS } from "../protocol/limits.js";
import { readResponseText, unreachable } from "./errors.js";
import { onLocalClock } from "./token-expiry.js";
import type { IssuedToken } from "./token-store.js";
import type { FetchFunction } from "./transport.js";
import { withinTime } from "./within-time.js";

/** What the host answers a request for an email sign-in code (see AuthSession.startEmailSignIn). */
export interface EmailCodeStarted {
  /** The handle the code works with, only where it was requested. */
  attempt: string;
  /** False when the address had all the codes it may get lately and no new mail was sent. */
  sent?: boolean;
}

/**
 * A deployment's auth routes (`POST /__platform/auth/<route>`), one method each, so the session
 * deals in tokens, not requests: an answer is the host's JSON as it sent it (a token's `expiresAt`
 * moved to this device's clock, see token-expiry.ts), a refusal the host's error as a
 * PlatformError, and a host that could not be reached `unavailable`.
 */
export class AuthRoutes {
  constructor(
    private readonly baseUrl: string,
    private readonly fetch: FetchFunction,
  ) {}

  /** A new protected guest. */
  guest(): Promise<IssuedToken> {
    return this.issue("guest", {});
  }

  /** A new token for the session of `token` (refused `unauthorized` once that session is over). */
  renew(token: string): Promise<IssuedToken> {
    return this.issue("renew", {}, token);
  }

  /** Asks the host to email `email` a sign-in code. */
  startEmailCode(email: string): Promise<EmailCodeStarted> {
    return this.post("email/start", { email }) as Promise<EmailCodeStarted>;
  }

  /**
   * An account sign-in at `route` (`email/verify`, `oidc`, `dev-sign-in`), presenting `guestToken`
   * (null: none) so that the host moves that guest's data to the account.
   */
  signIn(route: string, body: unknown, guestToken: string | null): Promise<IssuedToken> {
    return this.issue(route, body, guestToken);
  }

  /** Ends the session of `token` on the host, copies of the token included. */
  signOut(token: string): Promise<unknown> {
    return this.post("sign-out", {}, token);
  }

  /** A token from `route`, its expiry on this device's clock. */
  private async issue(route: string, body: unknown, bearer?: string | null): Promise<IssuedToken> {
    const sentAt = Date.now();
    return onLocalClock((await this.post(route, body, bearer)) as IssuedToken, sentAt);
  }

  /**
   * Posts to `route`; the answer must arrive within {@link LIMITS.callRetryMs}, else `unavailable`:
   * every call waits for the session's first load (a guest start), so a host that never answered
   * it would hold them all for good.
   */
  private async post(route: string, body: unknown, bearer?: string | null): Promise<unknown> {
    const url = `${this.baseUrl}/__platform/auth/${route}`;
    let answer: { response: Response; text: string };
    try {
      answer = await withinTime(LIMITS.callRetryMs, async (signal) => {
        const response = await this.fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
          },
          body: JSON.stringify(body ?? {}),
          signal,
        });
        return { response, text: await response.text() };
      });
    } catch (error) {
      throw unreachable(url, error);
    }
    return readResponseText(answer.response, answer.text);
  }
}
