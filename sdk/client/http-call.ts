import { LIMITS } from "../protocol/limits.js";
import { PlatformError } from "../values/index.js";
import { isGatewayFailure, readResponse, readResponseText, unreachable } from "./errors.js";
import type { FetchFunction } from "./transport.js";

/** How a call finds its identity: the current token, and what to do when the host refuses it. */
export interface CallAuth {
  validToken(): Promise<string | null>;
  handleUnauthorized(refused: string | null): Promise<boolean>;
  /** The user the token `validToken` gave belongs to (null: none). */
  user?(): string | null;
}

/** Waits between attempts of a call that got no answer: 100 ms doubling to 2 s, with jitter. */
const RETRY = { firstMs: 100, maxMs: 2000 } as const;

/** Options of {@link callWithAuth}. */
export interface CallInit {
  method: string;
  headers?: Record<string, string>;
  body?: string | Blob | Uint8Array;
  /**
   * Send the call again while it gets no answer (the host is unreachable, restarting or died, or
   * a balancer answers `502`/`503`/`504` of its own), for up to {@link LIMITS.callRetryMs}: only
   * for calls that may safely arrive twice (queries, and mutations with an idempotency key).
   */
  retryUnanswered?: boolean;
}

/**
 * One HTTP call with the client's identity: sends the token as `Authorization: Bearer`, and when
 * the host answers 401 renews it and tries once more. Failures are `PlatformError`s carrying the
 * server's code; no answer at all is `unavailable` (after the retries of `retryUnanswered`).
 */
export async function callWithAuth(
  fetch: FetchFunction,
  auth: CallAuth,
  url: string,
  init: CallInit,
): Promise<unknown> {
  const deadline = init.retryUnanswered ? Date.now() + LIMITS.callRetryMs : 0;
  let renewed = false;
  /** Who an attempt that got no answer was sent as: the host keeps a mutation's key per user. */
  let unansweredAs: string | null | undefined;
  for (let attempt = 0; ; attempt++) {
    const token = await auth.validToken();
    const user = auth.user?.() ?? null;
    if (unansweredAs !== undefined && user !== unansweredAs)
      throw new PlatformError(
        "conflict",
        "The signed-in user changed while the call got no answer: it was not sent again as the new user (a mutation may or may not have been applied as the user before).",
      );
    const retryLater = () =>
      new Promise((resolve) =>
        setTimeout(resolve, Math.min(RETRY.maxMs, RETRY.firstMs * 2 ** attempt) * (0.5 + Math.random() / 2)),
      );
    let response: Response;
    try {
      response = await fetch(url, {
        method: init.method,
        headers: { ...init.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
        ...(init.body === undefined ? {} : { body: init.body }),
      });
    } catch (error) {
      if (Date.now() < deadline) {
        unansweredAs = user;
        await retryLater();
        continue;
      }
      throw unreachable(url, error);
    }
    if (response.status === 401 && !renewed && (await auth.handleUnauthorized(token))) {
      renewed = true;
      await response.body?.cancel().catch(() => undefined);
      continue;
    }
    if (deadline === 0) return readResponse(response);
    const text = await response.text();
    if (isGatewayFailure(response.status, text) && Date.now() < deadline) {
      unansweredAs = user;
      await retryLater();
      continue;
    }
    return readResponseText(response, text);
  }
}
