/**
 * AuthSession's use of a shared token store, against a stand-in host (the real host's answers are
 * covered in test/client.test.ts): a store that refuses writes keeps the session in memory, and
 * its stale token is never taken for another tab's; a device clock far from the host's.
 */
import { afterEach, expect, it, vi } from "vitest";
import { AuthSession } from "./auth-session.js";
import { type FetchFunction, type KeyValueStore, memoryStore } from "./transport.js";

const HOUR = 60 * 60 * 1000;

afterEach(() => {
  vi.useRealTimers();
});

const answer = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** A host that issues guest G1, account A1 (about to expire) and renews A1 to A2; G1 is retired. */
function standInHost(): FetchFunction {
  const issued = (token: string, kind: "guest" | "account", expiresInMs: number) => ({
    token,
    userId: kind === "guest" ? "guest:1" : "user:1",
    kind,
    ...(kind === "account" ? { email: "ada@example.com" } : {}),
    expiresAt: Date.now() + expiresInMs,
  });
  return async (url, init) => {
    const bearer = init.headers.authorization?.slice("Bearer ".length);
    if (url.endsWith("/guest")) return answer(200, issued("G1", "guest", HOUR));
    if (url.endsWith("/dev-sign-in")) return answer(200, issued("A1", "account", 30_000));
    if (url.endsWith("/renew") && bearer === "A1") return answer(200, issued("A2", "account", HOUR));
    return answer(401, { error: { code: "unauthorized", message: "This session no longer exists." } });
  };
}

it("with a store that refuses writes, a renewal keeps the account in memory, not the store's stale guest", async () => {
  const values = new Map<string, string>();
  let refusing = false;
  const store: KeyValueStore = {
    get: (key) => values.get(key) ?? null,
    set: (key, value) => {
      if (refusing) throw new Error("QuotaExceededError");
      if (value === null) values.delete(key);
      else values.set(key, value);
    },
  };
  const session = new AuthSession("http://app.localhost", standInHost(), store, { guest: true });
  await session.ready();
  expect(await session.validToken()).toBe("G1");
  refusing = true;
  await session.devSignIn("ada@example.com");
  // A1 expires within a minute: this renews it. The store still holds G1, which nobody wrote since.
  expect(await session.validToken()).toBe("A2");
  expect(session.getState()).toMatchObject({ isSignedIn: true, identity: { email: "ada@example.com" } });
  session.close();
});

/** A host whose clock is `behindMs` behind the device's, issuing hour-long JWTs as host/auth does. */
function hostBehind(behindMs: number) {
  const counts = { guest: 0, renew: 0 };
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const issue = () => {
    const iat = Math.floor((Date.now() - behindMs) / 1000);
    const exp = iat + 3600;
    const claims = { sub: "guest:1", kind: "guest", iat, exp, n: counts.guest + counts.renew };
    const token = `${part({ alg: "HS256", typ: "JWT" })}.${part(claims)}.signature`;
    return { token, userId: "guest:1", kind: "guest", expiresAt: exp * 1000 };
  };
  const fetch: FetchFunction = async (url) => {
    if (url.endsWith("/guest")) counts.guest++;
    else if (url.endsWith("/renew")) counts.renew++;
    else return answer(404, { error: { code: "not_found", message: "No such route." } });
    return answer(200, issue());
  };
  return { counts, fetch };
}

it("a device clock two hours ahead of the host's renews a token 5 minutes before its lifetime ends, not every second", async () => {
  vi.useFakeTimers();
  const host = hostBehind(2 * HOUR);
  const session = new AuthSession("http://app.localhost", host.fetch, memoryStore(), { guest: true });
  await session.ready();
  const first = await session.validToken();
  await vi.advanceTimersByTimeAsync(10 * 60_000);
  expect(await session.validToken()).toBe(first);
  expect(host.counts).toEqual({ guest: 1, renew: 0 });
  // The hour-long token, counted on the device's clock from when it was asked for: renewed at 55 min.
  await vi.advanceTimersByTimeAsync(46 * 60_000);
  expect(host.counts).toEqual({ guest: 1, renew: 1 });
  expect(await session.validToken()).not.toBe(first);
  session.close();
});

it("a device clock behind the host's does not keep a token past its lifetime", async () => {
  vi.useFakeTimers();
  const host = hostBehind(-2 * HOUR);
  const session = new AuthSession("http://app.localhost", host.fetch, memoryStore(), { guest: true });
  await session.ready();
  await vi.advanceTimersByTimeAsync(56 * 60_000);
  expect(host.counts).toEqual({ guest: 1, renew: 1 });
  session.close();
});

it("a host that never answers the guest start leaves the session anonymous after 60 s, not loading for good", async () => {
  vi.useFakeTimers();
  const silent: FetchFunction = () => new Promise<Response>(() => {});
  const session = new AuthSession("http://app.localhost", silent, memoryStore(), { guest: true });
  let loaded = false;
  void session.ready().then(() => (loaded = true));
  await vi.advanceTimersByTimeAsync(61_000);
  expect(loaded).toBe(true);
  expect(session.getState()).toMatchObject({ isLoading: false, error: { code: "unavailable" } });
  session.close();
});

/** A host whose guest route fails with `failure` `times` times, then issues guest G1. */
function flakyGuests(times: number, failure: () => Response | never) {
  const counts = { guest: 0 };
  const fetch: FetchFunction = async (url) => {
    if (!url.endsWith("/guest"))
      return answer(404, { error: { code: "not_found", message: "No such route." } });
    counts.guest++;
    if (counts.guest <= times) return failure();
    return answer(200, { token: "G1", userId: "guest:1", kind: "guest", expiresAt: Date.now() + HOUR });
  };
  return { counts, fetch };
}

it("a guest start that failed at load (a network blip) is tried again by later calls, spaced out while it fails", async () => {
  vi.useFakeTimers();
  const host = flakyGuests(3, () => {
    throw new TypeError("fetch failed");
  });
  const session = new AuthSession("http://app.localhost", host.fetch, memoryStore(), { guest: true });
  await session.ready();
  expect(session.getState()).toMatchObject({ identity: null, error: { code: "unavailable" } });
  // The next call tries at once; then 1 s, 2 s, ... apart (half to all of it), anonymous meanwhile.
  expect(await session.validToken()).toBeNull();
  expect(await session.validToken()).toBeNull();
  expect(host.counts.guest).toBe(2);
  await vi.advanceTimersByTimeAsync(1000);
  expect(await session.validToken()).toBeNull();
  expect(await session.validToken()).toBeNull();
  expect(host.counts.guest).toBe(3);
  await vi.advanceTimersByTimeAsync(2000);
  expect(await session.validToken()).toBe("G1");
  expect(session.getState()).toMatchObject({ identity: { kind: "guest" }, error: null });
  expect(host.counts.guest).toBe(4);
  session.close();
});

it("a restricted deployment's refused guest (forbidden) is not asked for again by every call", async () => {
  vi.useFakeTimers();
  const host = flakyGuests(Number.POSITIVE_INFINITY, () =>
    answer(403, { error: { code: "forbidden", message: "This app admits approved accounts only." } }),
  );
  const session = new AuthSession("http://app.localhost", host.fetch, memoryStore(), { guest: true });
  await session.ready();
  for (let i = 0; i < 3; i++) {
    expect(await session.validToken()).toBeNull();
    await vi.advanceTimersByTimeAsync(10 * 60_000);
  }
  expect(host.counts.guest).toBe(1);
  expect(session.getState()).toMatchObject({ error: { code: "forbidden" } });
  session.close();
});

it("a guest start refused with the host's time to wait is not tried again before it", async () => {
  vi.useFakeTimers();
  const host = flakyGuests(
    1,
    () =>
      new Response(
        JSON.stringify({
          error: { code: "limit_exceeded", message: "Too many guests were created from your address." },
        }),
        { status: 429, headers: { "content-type": "application/json", "retry-after": "600" } },
      ),
  );
  const session = new AuthSession("http://app.localhost", host.fetch, memoryStore(), { guest: true });
  await session.ready();
  // Not at once, as after a blip: the host said 10 minutes.
  expect(await session.validToken()).toBeNull();
  await vi.advanceTimersByTimeAsync(599_000);
  expect(await session.validToken()).toBeNull();
  expect(host.counts.guest).toBe(1);
  await vi.advanceTimersByTimeAsync(1000);
  expect(await session.validToken()).toBe("G1");
  session.close();
});
