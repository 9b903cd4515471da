/**
 * AuthSession's use of a shared token store, against a stand-in host (the real host's answers are
 * covered in test/client.test.ts): a store that refuses writes keeps the session in memory, and
 * its stale token is never taken for another tab's.
 */
import { expect, it } from "vitest";
import { AuthSession } from "./auth-session.js";
import type { FetchFunction, KeyValueStore } from "./transport.js";

const HOUR = 60 * 60 * 1000;

/** A host that issues guest G1, account A1 (about to expire) and renews A1 to A2; G1 is retired. */
function standInHost(): FetchFunction {
  const issued = (token: string, kind: "guest" | "account", expiresInMs: number) => ({
    token,
    userId: kind === "guest" ? "guest:1" : "user:1",
    kind,
    ...(kind === "account" ? { email: "ada@example.com" } : {}),
    expiresAt: Date.now() + expiresInMs,
  });
  const answer = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
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
