import { LIMITS } from "../protocol/limits.js";
import { PlatformError } from "../values/index.js";
import { isGatewayFailure, readResponse, readResponseText, unreachable } from "./errors.js";
import type { FetchFunction } from "./transport.js";
import { withinTime } from "./within-time.js";

/** How a call finds its identity: the current token, and what to do when the host refuses it. */
export interface CallAuth {
  validToken(): Promise<string | null>;
  handleUnauthorized(refused: string | null): Promise<boolean>;
  /** The user the token `validToken` gave belongs to (null: none). */
  user?(): string | null;
}

/** Waits between attempts of a call that got no answer: 100 ms doubling to 2 s, with jitter. */
const RETRY = { firstMs: 100, maxMs: 2000 } as const;
/**
 * The least time one attempt is given for its whole answer (ms), however little of the retries'
 * time is left: what the host may take to answer (a handler's wall time, and a mutation's wait for
 * its lock on each side). Given less, a last attempt to a host that had just come back was cut
 * off after 2 s, a mutation it applied reported as not answered.
 */
const ATTEMPT_MIN_MS = LIMITS.handlerWallMs + 2 * LIMITS.mutationWaitMs;

/** Options of {@link callWithAuth}. */
export interface CallInit {
  method: string;
  headers?: Record<string, string>;
  body?: string | Blob | Uint8Array;
  /**
   * Send the call again while it gets no answer (the host is unreachable, restarting or died, or
   * a balancer answers `502`/`503`/`504` of its own), for up to {@link LIMITS.callRetryMs}: only
   * for calls that may safely arrive twice (queries, and mutations with an idempotency key). Such a
   * call also settles by then: an attempt still without its whole answer is given up then.
   */
  retryUnanswered?: boolean;
}

/**
 * One HTTP call with the client's identity: sends the token as `Authorization: Bearer`, and when
 * the host answers 401 renews it and tries once more. Failures are `PlatformError`s carrying the
 * server's code; no answer at all is `unavailable` (after the retries of `retryUnanswered`, and
 * at their deadline at the latest).
 */
export async function callWithAuth(
  fetch: FetchFunction,
  auth: CallAuth,
  url: string,
  init: CallInit,
): Promise<unknown> {
  /** When retries stop (0: none), counted once the first token is ready (a guest start may be slow). */
  let deadline = 0;
  let renewed = false;
  /** Who an attempt that got no answer was sent as: the host keeps a mutation's key per user. */
  let unansweredAs: string | null | undefined;
  for (let attempt = 0; ; attempt++) {
    const token = await auth.validToken();
    if (deadline === 0 && init.retryUnanswered) deadline = Date.now() + LIMITS.callRetryMs;
    const user = auth.user?.() ?? null;
    if (unansweredAs !== undefined && user !== unansweredAs)
      throw new PlatformError(
        "conflict",
        "The signed-in user changed while the call got no answer: it was not sent again as the new user (a mutation may or may not have been applied as the user before).",
      );
    // Never past the deadline: the last attempt starts by then (and gets ATTEMPT_MIN_MS at least).
    const retryLater = () =>
      new Promise((resolve) =>
        setTimeout(
          resolve,
          Math.min(
            deadline - Date.now(),
            Math.min(RETRY.maxMs, RETRY.firstMs * 2 ** attempt) * (0.5 + Math.random() / 2),
          ),
        ),
      );
    let answer: Answer;
    try {
      answer = await send(
        fetch,
        url,
        {
          method: init.method,
          headers: { ...init.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
          ...(init.body === undefined ? {} : { body: init.body }),
        },
        deadline,
      );
    } catch (error) {
      if (Date.now() < deadline) {
        unansweredAs = user;
        await retryLater();
        continue;
      }
      throw unreachable(url, error);
    }
    const { response, text } = answer;
    if (response.status === 401 && !renewed && (await auth.handleUnauthorized(token))) {
      renewed = true;
      if (text === null) await response.body?.cancel().catch(() => undefined);
      continue;
    }
    if (text === null) return readResponse(response);
    if (isGatewayFailure(response.status, text) && Date.now() < deadline) {
      unansweredAs = user;
      await retryLater();
      continue;
    }
    return readResponseText(response, text);
  }
}

/** An attempt's answer; `text` is its body, read within the deadline (null: no deadline, unread). */
interface Answer {
  response: Response;
  text: string | null;
}

/**
 * Sends one attempt. With a `deadline` (ms since the epoch, 0: none) the whole answer, body
 * included, must arrive by then (a host may stop in the middle of one), and at least
 * {@link ATTEMPT_MIN_MS} is left to each attempt, the last one included.
 */
function send(
  fetch: FetchFunction,
  url: string,
  request: Parameters<FetchFunction>[1],
  deadline: number,
): Promise<Answer> {
  if (deadline === 0) return fetch(url, request).then((response) => ({ response, text: null }));
  return withinTime(Math.max(ATTEMPT_MIN_MS, deadline - Date.now()), async (signal) => {
    const response = await fetch(url, { ...request, signal });
    return { response, text: await response.text() };
  });
}
