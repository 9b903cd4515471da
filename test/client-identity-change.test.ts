/**
 * A mutation is applied once per user: the host keeps its idempotency key per caller, so a
 * mutation whose answer was lost must never be sent again as another user (a guest who signed
 * in, an account that signed out), and what one user's subscriptions showed is not shown to the
 * next.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type app from "../fixtures/live-app/server/index.js";
import { createClient, nodeFetch, type PlatformClient } from "../sdk/client/node.js";
import { nodeTransport } from "../sdk/client/node-transport.js";
import type { SocketFactory, SocketLike } from "../sdk/client/transport.js";
import { until } from "./helpers/arrivals.js";
import { emailCode, startTestHost, type TestHost } from "./helpers/host.js";

let host: TestHost;
const clients: PlatformClient[] = [];

beforeAll(async () => {
  host = await startTestHost();
  expect((await host.deployFixture("board", "live-app")).status).toBe(201);
});
afterAll(async () => {
  for (const made of clients) made.close();
  await host.dispose();
});

function client(options: Parameters<typeof createClient>[1] = {}): PlatformClient<typeof app> {
  const made = createClient<typeof app>(host.deploymentUrl("board"), options);
  clients.push(made as unknown as PlatformClient);
  return made;
}

/** Sockets that drop every mutation answer while `dropping()`: answers lost on the way. */
function droppingAnswers(dropping: () => boolean): SocketFactory {
  return (url) => {
    const real = nodeTransport().socket(url);
    const wrapped: SocketLike = {
      get readyState() {
        return real.readyState;
      },
      send: (data) => real.send(data),
      close: (code, reason) => real.close(code, reason),
      onopen: null,
      onmessage: null,
      onclose: null,
      onerror: null,
    };
    real.onopen = (event) => wrapped.onopen?.(event);
    real.onmessage = (event) => {
      if (dropping() && String(event.data).includes('"mutationResult"')) return;
      wrapped.onmessage?.(event);
    };
    real.onclose = (event) => wrapped.onclose?.(event);
    real.onerror = (event) => wrapped.onerror?.(event);
    return wrapped;
  };
}

/** The board's items with `text`, as the operator sees them. */
async function itemsWith(text: string): Promise<number> {
  const rows = (
    await host.call("board", "query", "list", { paginationOpts: { numItems: 1000, cursor: null } })
  ).json() as { value: { page: Array<{ text: string }> } };
  return rows.value.page.filter((item) => item.text === text).length;
}

it("fails a socket mutation whose answer was lost when a guest signs in, instead of applying it again as the account", async () => {
  let dropping = true;
  const c = client({ transport: { socket: droppingAnswers(() => dropping) } });
  await c.auth.ready();
  // A subscription keeps the socket, so mutations go over it.
  const stop = c.subscribe("count", {}, () => {});
  const pending = c.mutation("add", { text: "pressed once, then signed in" });
  await until(async () => (await itemsWith("pressed once, then signed in")) === 1);
  await c.auth.startEmailSignIn("switcher@example.com");
  await c.auth.verifyEmailCode("switcher@example.com", await emailCode(host, "switcher@example.com"));
  dropping = false;
  await expect(pending).rejects.toMatchObject({ name: "PlatformError", code: "conflict" });
  // The account's own mutations go on as usual, and the first one was applied once.
  await c.mutation("add", { text: "as the account" });
  expect(await itemsWith("pressed once, then signed in")).toBe(1);
  stop();
});

it("fails a socket mutation whose answer was lost when the account signs out, and shows the next user nothing of the last", async () => {
  let dropping = false;
  const c = client({ transport: { socket: droppingAnswers(() => dropping) } });
  await c.auth.ready();
  await c.auth.startEmailSignIn("leaver@example.com");
  await c.auth.verifyEmailCode("leaver@example.com", await emailCode(host, "leaver@example.com"));
  const seen = new Promise<unknown>((resolve) => {
    c.subscribe("whoami", {}, (value) => {
      if ((value as { email?: string } | null)?.email === "leaver@example.com") resolve(value);
    });
  });
  await seen;
  dropping = true;
  const pending = c.mutation("add", { text: "pressed once, then signed out" });
  await until(async () => (await itemsWith("pressed once, then signed out")) === 1);
  await c.auth.signOut();
  // A component mounting now is not handed the account's identity from the cache.
  const handed: unknown[] = [];
  c.subscribe("whoami", {}, (value) => handed.push(value));
  dropping = false;
  await expect(pending).rejects.toMatchObject({ code: "conflict" });
  expect(await itemsWith("pressed once, then signed out")).toBe(1);
  await until(async () => handed.length > 0);
  expect(handed.every((value) => (value as { kind?: string } | null)?.kind === "guest")).toBe(true);
});

it("does not retry an HTTP mutation that got no answer as a user who signed in meanwhile", async () => {
  let loseNext = false;
  let c!: PlatformClient<typeof app>;
  c = client({
    transport: {
      fetch: async (url, init) => {
        const response = await nodeFetch(url, init);
        if (!loseNext || !url.endsWith("/api/mutation/add")) return response;
        loseNext = false;
        // Applied, but the answer is lost; the guest signs in before the retry.
        await response.text();
        await c.auth.startEmailSignIn("http-switcher@example.com");
        await c.auth.verifyEmailCode(
          "http-switcher@example.com",
          await emailCode(host, "http-switcher@example.com"),
        );
        throw new TypeError("the connection was reset");
      },
    },
  });
  await c.auth.ready();
  loseNext = true;
  await expect(c.mutation("add", { text: "sent over http once" })).rejects.toMatchObject({
    code: "conflict",
  });
  expect(await itemsWith("sent over http once")).toBe(1);
  // Without a change of user, a lost answer is retried and applied once, as before.
  loseNext = false;
  expect(await c.mutation("add", { text: "plain" })).toEqual(expect.any(String));
});

it("shows the next user none of the pages of a paginated list the last one loaded", async () => {
  const c = client();
  await c.auth.ready();
  await c.auth.startEmailSignIn("pager@example.com");
  await c.auth.verifyEmailCode("pager@example.com", await emailCode(host, "pager@example.com"));
  for (let i = 0; i < 6; i++) await c.mutation("add", { text: `row ${i}` });
  const list = c.paginatedQuery("list", {}, { initialNumItems: 2 });
  const states: Array<{ results: unknown[]; status: string }> = [];
  const stop = list.subscribe(() => states.push(list.getSnapshot()));
  await until(async () => list.getSnapshot().status === "CanLoadMore");
  list.loadMore(2);
  await until(async () => list.getSnapshot().results.length === 4);
  const before = states.length;
  await c.auth.signOut();
  // The account's two pages (items and cursors) are gone at once, not when an answer differs.
  expect(states[before]).toMatchObject({ results: [], status: "LoadingFirstPage" });
  await until(async () => list.getSnapshot().status === "CanLoadMore");
  expect(list.getSnapshot().results).toHaveLength(2);
  stop();
});
