/**
 * platform/client in Node against a real host (real HTTP, real WebSockets, real isolates): typed
 * errors, live subscriptions with read-your-writes, guests and sign-in with the guest's data
 * kept, token renewal, pagination with its reset on invalidation, storage, and reconnecting after
 * the server restarts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendRequest } from "../cli/http.js";
import type app from "../fixtures/live-app/server/index.js";
import { createClient, type PlatformClient } from "../sdk/client/node.js";
import { memoryStore } from "../sdk/client/transport.js";
import { emailCode, fixtureCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
const clients: PlatformClient[] = [];

function client(options: Parameters<typeof createClient>[1] = {}): PlatformClient<typeof app> {
  const made = createClient<typeof app>(host.deploymentUrl("board"), options);
  clients.push(made as unknown as PlatformClient);
  return made;
}

/** Resolves with the first value `predicate` accepts among a subscription's values. */
function until<T>(
  subscribe: (onValue: (value: T) => void) => () => void,
  predicate: (value: T) => boolean,
): Promise<T> {
  return new Promise((resolve) => {
    let stop: (() => void) | undefined;
    let done = false;
    stop = subscribe((value) => {
      if (done || !predicate(value)) return;
      done = true;
      queueMicrotask(() => stop?.());
      resolve(value);
    });
  });
}

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("board", "live-app")).status).toBe(201);
});
afterAll(async () => {
  for (const made of clients) made.close();
  await host.dispose();
});

describe("platform/client in Node", () => {
  it("runs queries and mutations over HTTP and surfaces typed errors with the server's code", async () => {
    const c = client();
    const id = await c.mutation("add", { text: "over http" });
    expect(typeof id).toBe("string");
    expect(await c.query("count")).toBeGreaterThanOrEqual(1);
    await expect(c.query("nope" as "count")).rejects.toMatchObject({
      name: "PlatformError",
      code: "not_found",
    });
    await expect(c.mutation("add", { text: "  " })).rejects.toMatchObject({
      code: "handler_error",
      message: "Uncaught Error: text is required",
    });
    const anonymous = client({ guest: false });
    await expect(anonymous.mutation("add", { text: "x" })).rejects.toMatchObject({ code: "unauthorized" });
  });

  it("pushes subscription updates, and a mutation resolves only after its effect arrived", async () => {
    const c = client();
    const seen: unknown[][] = [];
    const stop = c.subscribe("mine", undefined, (items) => seen.push(items.map((i) => i.text)));
    await until<unknown>(
      (f) => c.subscribe("mine", undefined, f),
      () => true,
    );
    await c.mutation("add", { text: "first" });
    // Read-your-writes: the subscription already shows the mutation when it resolves.
    expect(seen.at(-1)).toEqual(["first"]);
    const other = client();
    const watched = until<number>(
      (f) => c.subscribe("count", undefined, f),
      (n) => n >= 3,
    );
    await other.mutation("add", { text: "from elsewhere" });
    await other.mutation("add", { text: "and again" });
    expect(await watched).toBeGreaterThanOrEqual(3);
    stop();
  });

  it("says at creation that it needs the deployment's origin", () => {
    for (const [url, shown] of [
      [undefined, "nothing (outside a page there is no location to take it from)"],
      ["", '"" (outside a page there is no location to take it from)'],
      ["localhost:3000", '"localhost:3000"'],
    ] as const)
      expect(() => createClient(url as unknown as string)).toThrow(
        `createClient needs the deployment's http(s) origin, as createClient("http://localhost:3000"), not ${shown}.`,
      );
  });

  it("refuses a mutation or subscription too large for one socket message before sending it", async () => {
    // Sent, it closed the socket (1009), and sent again on each new socket it closed that one too.
    const c = client();
    await until<unknown>(
      (f) => c.subscribe("mine", undefined, f),
      () => true,
    );
    const states: string[] = [];
    c.onConnectionStateChange((state) => states.push(state));
    const huge = "h".repeat(1024 * 1024);
    const tooLarge = {
      name: "PlatformError",
      code: "bad_request",
      message:
        "The mutation's arguments are too large to send: a message to the host holds at most 1048576 bytes. Pass ids, not data.",
    };
    await expect(c.mutation("add", { text: huge })).rejects.toMatchObject(tooLarge);
    // Multi-byte text is counted in UTF-8 bytes: under the limit in characters, over it in bytes.
    await expect(c.mutation("add", { text: "é".repeat(600_000) })).rejects.toMatchObject(tooLarge);
    const refused = await new Promise<unknown>((resolve) =>
      c.subscribe("mine", { text: huge } as never, () => {}, resolve),
    );
    expect(refused).toMatchObject({
      code: "bad_request",
      message: tooLarge.message.replace("mutation", "subscription"),
    });
    expect(typeof (await c.mutation("add", { text: "after the refusals" }))).toBe("string");
    expect(states).toEqual([]);
  });

  it("starts a guest, signs in by email code, and keeps the guest's items", async () => {
    const c = client();
    await c.auth.ready();
    const guest = c.auth.getState();
    expect(guest).toMatchObject({ isLoading: false, isSignedIn: false, error: null });
    expect(guest.identity?.kind).toBe("guest");
    await c.mutation("add", { text: "made as a guest" });
    const states: boolean[] = [];
    c.auth.subscribe(() => states.push(c.auth.getState().isSignedIn));
    await c.auth.startEmailSignIn("keeper@example.com");
    const account = await c.auth.verifyEmailCode(
      "keeper@example.com",
      await emailCode(host, "keeper@example.com"),
    );
    expect(account).toMatchObject({ kind: "account", email: "keeper@example.com" });
    expect(states.at(-1)).toBe(true);
    const mine = await c.query("mine");
    expect(mine.map((i) => i.text)).toEqual(["made as a guest"]);
    expect(mine[0]?.owner).toBe(account.userId);
    // A live subscription follows the new identity (the socket reconnects with the new token).
    const who = await until(
      (f) => c.subscribe("whoami", undefined, f),
      (w) => w !== null,
    );
    expect(who).toMatchObject({ kind: "account", email: "keeper@example.com" });
  });

  it("two clients of one store (two tabs): the other takes a sign-in's account, never overwriting it with a new guest", async () => {
    const store = memoryStore();
    const first = client({ transport: { store } });
    await first.auth.ready();
    const second = client({ transport: { store } });
    await second.auth.ready();
    expect(second.auth.getState().identity?.userId).toBe(first.auth.getState().identity?.userId);
    await first.auth.startEmailSignIn("tabs@example.com");
    await first.auth.verifyEmailCode("tabs@example.com", await emailCode(host, "tabs@example.com"));
    // The second still holds the guest's token, which the sign-in retired: its socket is refused.
    const who = await until(
      (f) => second.subscribe("whoami", undefined, f),
      (w) => w !== null,
    );
    expect(who).toMatchObject({ kind: "account", email: "tabs@example.com" });
    expect(second.auth.getState().isSignedIn).toBe(true);
    // The store (what a reload or a new tab reads) still holds the account.
    const reloaded = client({ transport: { store } });
    await reloaded.auth.ready();
    expect(reloaded.auth.getState().identity).toMatchObject({ kind: "account", email: "tabs@example.com" });
  });

  it("signOut() ends the session on the host: a copy of the old token is refused", async () => {
    const c = client();
    await c.auth.ready();
    const old = await c.auth.token();
    await c.auth.signOut();
    const copy = await sendRequest(`${host.deploymentUrl("board")}/api/query/count`, {
      method: "POST",
      headers: { authorization: `Bearer ${old}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(copy.status).toBe(401);
    expect(c.auth.getState().identity?.kind).toBe("guest");
    expect(await c.auth.token()).not.toBe(old);
  });

  it("keeps a pending upgrade's guest token when sign-in fails, and retryAuth() runs the step again", async () => {
    const c = client();
    await c.auth.ready();
    await c.mutation("add", { text: "pending guest item" });
    await c.auth.startEmailSignIn("retry@example.com");
    await expect(c.auth.verifyEmailCode("retry@example.com", "00000000")).rejects.toMatchObject({
      code: expect.stringMatching(/unauthorized|bad_request|forbidden/),
    });
    expect(c.auth.getState().error).not.toBeNull();
    expect(c.auth.getState().identity?.kind).toBe("guest");
    await c.auth.verifyEmailCode("retry@example.com", await emailCode(host, "retry@example.com"));
    expect(c.auth.getState()).toMatchObject({ isSignedIn: true, error: null });
    expect((await c.query("mine")).map((i) => i.text)).toEqual(["pending guest item"]);
  });

  it("retryAuth() runs a failed step again: a guest sign-in that met a network failure", async () => {
    let failNext = true;
    const { nodeFetch } = await import("../sdk/client/node.js");
    const c = client({
      transport: {
        fetch: (url, init) => {
          if (failNext && url.endsWith("/__platform/auth/guest")) {
            failNext = false;
            return Promise.reject(new TypeError("network is down"));
          }
          return nodeFetch(url, init);
        },
      },
    });
    await c.auth.ready();
    expect(c.auth.getState()).toMatchObject({ isLoading: false, identity: null });
    expect(c.auth.getState().error).toMatchObject({ code: "unavailable" });
    await c.retryAuth();
    expect(c.auth.getState()).toMatchObject({ error: null, identity: { kind: "guest" } });
    expect(await c.mutation("add", { text: "after retry" })).toEqual(expect.any(String));
  });

  it("renews a stored token that is about to expire, keeping the same identity", async () => {
    const store = memoryStore();
    const first = client({ transport: { store } });
    await first.auth.ready();
    const identity = first.auth.getState().identity;
    const key = `platform.auth:${host.deploymentUrl("board")}`;
    const stored = JSON.parse(store.get(key) as string) as { current: { token: string; expiresAt: number } };
    store.set(key, JSON.stringify({ current: { ...stored.current, expiresAt: Date.now() } }));
    const second = client({ transport: { store } });
    expect(await second.auth.token()).toEqual(expect.any(String));
    // Renewed: the stored token now expires an hour from now again (`expiresAt` is in ms; the JWT
    // itself may be byte-identical when issued within the same second).
    const renewed = JSON.parse(store.get(key) as string) as { current: { expiresAt: number } };
    expect(renewed.current.expiresAt).toBeGreaterThan(Date.now() + 50 * 60 * 1000);
    expect(second.auth.getState().identity).toEqual(identity);
    await second.mutation("add", { text: "after renewal" });
  });

  /** A token store holding a guest's token with a tampered signature, which the host refuses. */
  async function storeWithRefusedToken(): Promise<ReturnType<typeof memoryStore>> {
    const store = memoryStore();
    await client({ transport: { store } }).auth.ready();
    const key = `platform.auth:${host.deploymentUrl("board")}`;
    const stored = JSON.parse(store.get(key) as string) as { current: { token: string } };
    const tampered = `${stored.current.token.slice(0, -4)}AAAA`;
    store.set(key, JSON.stringify({ current: { ...stored.current, token: tampered } }));
    return store;
  }

  it("replaces a refused token: a 401 renews once and retries", async () => {
    const store = await storeWithRefusedToken();
    const other = client({ transport: { store: memoryStore() } });
    await other.auth.ready();
    const fresh = client({ transport: { store } });
    expect(await fresh.query("count")).toBeGreaterThan(0);
    expect(fresh.auth.getState().identity?.kind).toBe("guest");
  });

  it("replaces a token the socket's upgrade refused, and connects", async () => {
    const store = await storeWithRefusedToken();
    // The first upgrade is refused (401) before the socket ever opened; the client must not stay
    // "connecting" without a socket.
    const fresh = client({ transport: { store } });
    const first = await new Promise<unknown>((resolve) => fresh.subscribe("count", {}, resolve));
    expect(first).toEqual(expect.any(Number));
    expect(fresh.connectionState).toBe("open");
  });

  it("uploads and deletes files with storage.upload/delete, errors carrying the storage codes", async () => {
    const dev = await startTestHost({ devDeployment: "dev" });
    try {
      await dev.deployments.deploy("dev", { code: await fixtureCode("live-app") });
      const c = createClient(dev.deploymentUrl("dev"));
      clients.push(c);
      const png = new Blob([Buffer.from("89504e470d0a1a0a0000000d49484452", "hex")], { type: "image/png" });
      const uploaded = await c.storage.upload(png, { public: true });
      expect(uploaded).toMatchObject({ size: 16, contentType: "image/png" });
      expect(uploaded.key).toMatch(/^public\//);
      expect(uploaded.url).toBe(`${dev.deploymentUrl("dev")}/storage/${uploaded.key}`);
      const { nodeFetch } = await import("../sdk/client/node.js");
      const read = await nodeFetch(uploaded.url, { method: "GET", headers: {} });
      expect(Buffer.from(await read.arrayBuffer()).toString("hex")).toBe("89504e470d0a1a0a0000000d49484452");
      const secret = await c.storage.upload(new Blob(["private text"], { type: "text/plain" }));
      expect(secret.key).toMatch(/^private\//);
      expect((await nodeFetch(secret.url, { method: "GET", headers: {} })).status).toBe(401);
      const withToken = await nodeFetch(await c.storage.authorizedUrl(secret.url), {
        method: "GET",
        headers: {},
      });
      expect(await withToken.text()).toBe("private text");
      // A stored link is the app's users' text: only the app's own storage URLs get the token
      // (found by review: any URL got it, so a link to another site took the viewer's identity).
      const own = new URL(dev.deploymentUrl("dev"));
      const elsewhere = [
        "https://evil.example/x.png",
        `//evil.example/storage/${secret.key}`,
        `${own.protocol}//other.${own.host}/storage/${secret.key}`,
        `${own.protocol}//${own.hostname}:1/storage/${secret.key}`,
        `${own.origin}/api/query/count`,
        `${own.origin}/storage/../api/query/count`,
        `${own.origin}/storagex/${secret.key}`,
      ];
      for (const url of elsewhere) expect(await c.storage.authorizedUrl(url)).toBe(url);
      expect(await c.storage.authorizedUrl(`/storage/${secret.key}`)).toMatch(
        new RegExp(`^${own.origin}/storage/${secret.key}\\?platform_token=`),
      );
      await c.storage.delete(uploaded.key);
      await c.storage.delete(uploaded.key);
      expect((await nodeFetch(uploaded.url, { method: "GET", headers: {} })).status).toBe(404);
      await expect(
        c.storage.upload(new Blob(["<!doctype html><p>hi"], { type: "text/plain" })),
      ).rejects.toMatchObject({ name: "PlatformError", code: "blocked_type" });
      await expect(c.storage.delete("elsewhere/x")).rejects.toMatchObject({ code: "invalid_request" });
    } finally {
      await dev.dispose();
    }
  });

  it("paginates: pages accumulate, loadMore follows the cursor, an invalidation resets to the first page", async () => {
    const fresh = await startTestHost();
    try {
      expect((await fresh.deployFixture("pages", "live-app")).status).toBe(201);
      const c = createClient<typeof app>(fresh.deploymentUrl("pages"));
      clients.push(c as unknown as PlatformClient);
      for (let i = 1; i <= 7; i++) await c.mutation("add", { text: `item ${i}` });
      const pages = c.paginatedQuery("list", {}, { initialNumItems: 3 });
      const states: string[] = [];
      const next = (predicate: (s: ReturnType<typeof pages.getSnapshot>) => boolean) =>
        new Promise<ReturnType<typeof pages.getSnapshot>>((resolve) => {
          const check = () => {
            const state = pages.getSnapshot();
            if (predicate(state)) resolve(state);
          };
          pages.subscribe(check);
          check();
        });
      const stop = pages.subscribe(() => states.push(pages.getSnapshot().status));
      const first = await next((s) => s.status === "CanLoadMore");
      expect(first.results.map((i) => i.text)).toEqual(["item 7", "item 6", "item 5"]);
      first.loadMore(3);
      const second = await next((s) => s.results.length === 6);
      expect(second.results.map((i) => i.text)).toEqual([
        "item 7",
        "item 6",
        "item 5",
        "item 4",
        "item 3",
        "item 2",
      ]);
      second.loadMore(3);
      const all = await next((s) => s.status === "Exhausted");
      expect(all.results).toHaveLength(7);
      expect(states).toContain("LoadingMore");
      // A new item lands in the first page: the list resets to the first page, showing it.
      await c.mutation("add", { text: "item 8" });
      const reset = await next((s) => s.results[0]?.text === "item 8");
      expect(reset.results.map((i) => i.text)).toEqual(["item 8", "item 7", "item 6"]);
      expect(reset.status).toBe("CanLoadMore");
      expect(pages.resets).toBe(1);
      stop();
    } finally {
      await fresh.dispose();
    }
  });

  it("reconnects with backoff after the server restarts, and subscribes again", async () => {
    const { mkdtemp } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const data = await mkdtemp(join(tmpdir(), "platform-restart-"));
    let server = await startTestHost({ data });
    const port = server.port;
    expect((await server.deployFixture("again", "live-app")).status).toBe(201);
    const c = createClient<typeof app>(server.deploymentUrl("again"));
    clients.push(c as unknown as PlatformClient);
    const counts: number[] = [];
    c.subscribe("count", undefined, (n) => counts.push(n));
    await c.mutation("add", { text: "before restart" });
    expect(counts.at(-1)).toBe(1);
    const states: string[] = [];
    c.onConnectionStateChange((state) => states.push(state));
    await server.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    server = await startTestHost({ data, port });
    try {
      const writer = createClient<typeof app>(server.deploymentUrl("again"));
      clients.push(writer as unknown as PlatformClient);
      await writer.mutation("add", { text: "after restart" });
      await until(
        (f) => c.subscribe("count", undefined, f),
        (n) => n === 2,
      );
      expect(states).toContain("waiting");
      expect(states.at(-1)).toBe("open");
      // Mutations flow over the new connection too, with read-your-writes.
      await c.mutation("add", { text: "over the new socket" });
      expect(counts.at(-1)).toBe(3);
    } finally {
      await server.dispose();
    }
  });
});
