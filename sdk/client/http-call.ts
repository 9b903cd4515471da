import { readResponse, unreachable } from "./errors.js";
import type { FetchFunction } from "./transport.js";

/** How a call finds its identity: the current token, and what to do when the host refuses it. */
export interface CallAuth {
  validToken(): Promise<string | null>;
  handleUnauthorized(refused: string | null): Promise<boolean>;
}

/**
 * One HTTP call with the client's identity: sends the token as `Authorization: Bearer`, and when
 * the host answers 401 renews it and tries once more. Failures are `PlatformError`s carrying the
 * server's code; no answer at all is `unavailable`.
 */
export async function callWithAuth(
  fetch: FetchFunction,
  auth: CallAuth,
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: string | Blob | Uint8Array },
): Promise<unknown> {
  for (let attempt = 0; ; attempt++) {
    const token = await auth.validToken();
    let response: Response;
    try {
      response = await fetch(url, {
        method: init.method,
        headers: { ...init.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
        ...(init.body === undefined ? {} : { body: init.body }),
      });
    } catch (error) {
      throw unreachable(url, error);
    }
    if (response.status === 401 && attempt === 0 && (await auth.handleUnauthorized(token))) {
      await response.body?.cancel().catch(() => undefined);
      continue;
    }
    return readResponse(response);
  }
}
