/**
 * callWithAuth against hosts that never answer, on fake timers: a call with retries settles with
 * `unavailable` once their 60 s are over (docs/client.md "Retries"), whatever the `fetch` does.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { LIMITS } from "../protocol/limits.js";
import { isPlatformError } from "../values/index.js";
import { type CallAuth, callWithAuth } from "./http-call.js";
import type { FetchFunction } from "./transport.js";

const anonymous: CallAuth = { validToken: async () => null, handleUnauthorized: async () => false };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Starts a retried call on `fetch`; `outcome` is set once it settles. */
function startCall(fetch: FetchFunction) {
  const state: { outcome?: { value: unknown } | { error: unknown } } = {};
  void callWithAuth(fetch, anonymous, "http://app.localhost/api/query/list", {
    method: "POST",
    body: "{}",
    retryUnanswered: true,
  }).then(
    (value) => (state.outcome = { value }),
    (error: unknown) => (state.outcome = { error }),
  );
  return state;
}

it("a call to a host that takes the request and never answers fails with unavailable after 60 s", async () => {
  const signals: AbortSignal[] = [];
  // A `fetch` that ignores its signal, as an app's own may: the call settles all the same.
  const call = startCall((_url, init) => {
    if (init.signal) signals.push(init.signal);
    return new Promise<Response>(() => {});
  });
  await vi.advanceTimersByTimeAsync(LIMITS.callRetryMs - 1000);
  expect(call.outcome).toBeUndefined();
  await vi.advanceTimersByTimeAsync(2000);
  const error = (call.outcome as { error?: unknown } | undefined)?.error;
  expect(isPlatformError(error, "unavailable")).toBe(true);
  expect(String((error as Error).message)).toMatch(/no answer within 60 s/);
  expect(signals.length).toBe(1);
  expect(signals[0]?.aborted).toBe(true);
});

it("a call whose answer stops in the middle of its body fails with unavailable after 60 s", async () => {
  const call = startCall(
    async () => new Response(new ReadableStream({ start: (c) => c.enqueue(new Uint8Array([123])) })),
  );
  await vi.advanceTimersByTimeAsync(LIMITS.callRetryMs + 1000);
  expect(isPlatformError((call.outcome as { error?: unknown } | undefined)?.error, "unavailable")).toBe(true);
});

it("a call to a host that cannot be reached is retried until 60 s, then fails with unavailable", async () => {
  let attempts = 0;
  const call = startCall(async () => {
    attempts++;
    throw new TypeError("fetch failed");
  });
  await vi.advanceTimersByTimeAsync(LIMITS.callRetryMs + 3000);
  expect(isPlatformError((call.outcome as { error?: unknown } | undefined)?.error, "unavailable")).toBe(true);
  expect(attempts).toBeGreaterThan(20);
});

it("the last attempt, to a host just back, gets what a mutation may take to be answered", async () => {
  // Unreachable for 58 s, then a host whose answer takes 20 s (a handler and its lock's wait).
  const started = Date.now();
  const call = startCall(async () => {
    if (Date.now() - started < LIMITS.callRetryMs - 2000) throw new TypeError("fetch failed");
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    return new Response('{"ok":1}', { status: 200, headers: { "content-type": "application/json" } });
  });
  await vi.advanceTimersByTimeAsync(LIMITS.callRetryMs + 25_000);
  expect(call.outcome).toEqual({ value: { ok: 1 } });
});
