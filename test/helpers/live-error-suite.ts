import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type PlatformClient } from "../../sdk/client/node.js";
import type { PaginatedQueryState } from "../../sdk/client/paginated-query.js";
import type { PlatformError } from "../../sdk/values/index.js";
import type { TestHost } from "./host.js";
import { connectSync, type SyncMessage, type SyncSocket } from "./sync-socket.js";

const DEPLOYMENT = "errs";
const FAILURE = { code: "handler_error" };

/** A subscription's outcomes as `{ value }` or `{ error: code }`, from its messages. */
function outcomes(messages: SyncMessage[]): unknown[] {
  return messages
    .filter((m) => m.type === "value" || m.type === "error")
    .map((m) => (m.type === "value" ? { value: m.value } : { error: (m.error as { code: string }).code }));
}

/** Records a client subscription's outcomes, with a wait for the n-th. */
function recorder() {
  const seen: unknown[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const push = (outcome: unknown) => {
    seen.push(outcome);
    for (const waiter of [...waiters])
      if (seen.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
  };
  return {
    seen,
    onValue: (value: unknown) => push({ value }),
    onError: (error: PlatformError) => push({ error: error.code }),
    /** Resolves once `count` outcomes arrived. */
    count: (count: number) =>
      new Promise<void>((resolve) => {
        if (seen.length >= count) resolve();
        else waiters.push({ count, resolve });
      }),
  };
}

/**
 * Live queries whose runs fail (issue: an error is a result too), over a real WebSocket and
 * through `platform/client`, on the host that `start` returns: a shared subscription's state is
 * its latest outcome, value or error; each subscriber gets it once when it joins and after every
 * change; a failed run re-runs only when what it read changes.
 */
export function liveErrorSuite(label: string, start: () => Promise<TestHost>): void {
  describe(label, () => {
    let host: TestHost;
    const sockets: SyncSocket[] = [];
    const clients: PlatformClient[] = [];
    let barriers = 0;

    beforeAll(async () => {
      host = await start();
      expect((await host.deployFixture(DEPLOYMENT, "live-errors")).status).toBe(201);
    });
    afterAll(async () => {
      for (const socket of sockets) socket.ws.close();
      for (const client of clients) client.close();
      await host?.dispose();
    });

    const connect = async () => {
      const socket = await connectSync(host.deploymentUrl(DEPLOYMENT));
      sockets.push(socket);
      return socket;
    };
    const client = () => {
      const made = createClient(host.deploymentUrl(DEPLOYMENT), { guest: false });
      clients.push(made);
      return made;
    };
    /** A mutation over HTTP; resolves once the re-runs it caused have pushed their outcomes. */
    const mutate = async (name: string, args: unknown) => {
      const response = await host.call(DEPLOYMENT, "mutation", name, args);
      expect(response.status).toBe(200);
      await host.live.settled();
      return response.json<{ value: unknown }>().value;
    };
    /** Everything the host had to push to `socket` so far has arrived once this resolves. */
    const barrier = (socket: SyncSocket) =>
      socket.mutation(`barrier${++barriers}`, "add", { bucket: 9999, text: "elsewhere" });
    const first = (socket: SyncSocket, id: string) => socket.next((m) => m.id === id);

    it("a second subscriber to a query that fails gets the error, and a failure re-runs only when its reads change", async () => {
      await mutate("add", { bucket: 101, text: "boom" });
      const a = await connect();
      const b = await connect();
      a.subscribe("q", "checked", { bucket: 101 });
      expect(await first(a, "q")).toMatchObject({ type: "error", error: FAILURE });
      b.subscribe("q", "checked", { bucket: 101 });
      expect(await first(b, "q")).toMatchObject({ type: "error", error: FAILURE });
      const before = host.live.executions;
      await mutate("add", { bucket: 9101, text: "unrelated" });
      expect(host.live.executions).toBe(before);
      await Promise.all([barrier(a), barrier(b)]);
      expect([outcomes(a.of("q")), outcomes(b.of("q"))]).toEqual([
        [{ error: "handler_error" }],
        [{ error: "handler_error" }],
      ]);
    });

    it("a second subscriber to a query that used to succeed and now fails gets the error, not the old value", async () => {
      const a = await connect();
      a.subscribe("q", "checked", { bucket: 102 });
      expect(await first(a, "q")).toEqual({ type: "value", id: "q", value: [] });
      await mutate("add", { bucket: 102, text: "boom" });
      await a.next((m) => m.id === "q" && m.type === "error");
      const b = await connect();
      b.subscribe("q", "checked", { bucket: 102 });
      expect(await first(b, "q")).toMatchObject({ type: "error", error: FAILURE });
      await Promise.all([barrier(a), barrier(b)]);
      expect(outcomes(a.of("q"))).toEqual([{ value: [] }, { error: "handler_error" }]);
      expect(outcomes(b.of("q"))).toEqual([{ error: "handler_error" }]);
    });

    it("a failed query that recovers pushes its value again, even the last good one", async () => {
      const a = await connect();
      a.subscribe("q", "checked", { bucket: 103 });
      await first(a, "q");
      const boom = await mutate("add", { bucket: 103, text: "boom" });
      await a.next((m) => m.id === "q" && m.type === "error");
      const before = host.live.executions;
      await mutate("add", { bucket: 9103, text: "unrelated" });
      expect(host.live.executions).toBe(before);
      await mutate("remove", { id: boom });
      await a.next((m) => m.id === "q" && m.type === "value" && a.of("q").indexOf(m) > 1);
      await mutate("add", { bucket: 103, text: "fine" });
      await barrier(a);
      expect(outcomes(a.of("q"))).toEqual([
        { value: [] },
        { error: "handler_error" },
        { value: [] },
        { value: ["fine"] },
      ]);
    });

    it("sockets subscribing at the same moment each get the initial value, or error, once", async () => {
      await mutate("add", { bucket: 104, text: "here" });
      await mutate("add", { bucket: 105, text: "boom" });
      const all = await Promise.all(Array.from({ length: 6 }, () => connect()));
      for (const socket of all) {
        socket.subscribe("fine", "checked", { bucket: 104 });
        socket.subscribe("failing", "checked", { bucket: 105 });
      }
      await Promise.all(all.map((socket) => Promise.all([first(socket, "fine"), first(socket, "failing")])));
      await Promise.all(all.map(barrier));
      for (const socket of all) {
        expect(outcomes(socket.of("fine"))).toEqual([{ value: ["here"] }]);
        expect(outcomes(socket.of("failing"))).toEqual([{ error: "handler_error" }]);
      }
    });

    it("platform/client: subscribe surfaces the error, then the recovered value, to every subscriber", async () => {
      const one = client();
      const a = recorder();
      one.subscribe("checked", { bucket: 106 }, a.onValue, a.onError);
      await a.count(1);
      const boom = await mutate("add", { bucket: 106, text: "boom" });
      await a.count(2);
      const two = client();
      const b = recorder();
      two.subscribe("checked", { bucket: 106 }, b.onValue, b.onError);
      await b.count(1);
      // A second listener of the same client shares its subscription and starts from its state.
      const c = recorder();
      one.subscribe("checked", { bucket: 106 }, c.onValue, c.onError);
      await c.count(1);
      await mutate("remove", { id: boom });
      await Promise.all([a.count(3), b.count(2), c.count(2)]);
      expect(a.seen).toEqual([{ value: [] }, { error: "handler_error" }, { value: [] }]);
      expect(b.seen).toEqual([{ error: "handler_error" }, { value: [] }]);
      expect(c.seen).toEqual([{ error: "handler_error" }, { value: [] }]);
    });

    it("platform/client: a paginated query shows a page's error, also to a late subscriber, then the recovered items", async () => {
      await mutate("add", { bucket: 107, text: "kept" });
      /** A paginated query of bucket 107 on a new client, and a wait for the state it shows. */
      const open = () => {
        const query = client().paginatedQuery("checkedPage", { bucket: 107 }, { initialNumItems: 10 });
        const hold = query.subscribe(() => {});
        /** Resolves with the first state (now or later) that `predicate` accepts. */
        const until = (predicate: (state: PaginatedQueryState<unknown>) => boolean) =>
          new Promise<PaginatedQueryState<unknown>>((resolve) => {
            const check = () => {
              const state = query.getSnapshot();
              if (!predicate(state)) return;
              stop();
              resolve(state);
            };
            const stop = query.subscribe(check);
            check();
          });
        return { until, hold };
      };
      const texts = (state: PaginatedQueryState<unknown>) =>
        state.results.map((item) => (item as { text: string }).text);
      const early = open();
      expect(texts(await early.until((s) => s.status === "Exhausted"))).toEqual(["kept"]);
      const boom = await mutate("add", { bucket: 107, text: "boom" });
      expect((await early.until((s) => s.error !== null)).error?.code).toBe("handler_error");
      const late = open();
      const failed = await late.until((s) => s.error !== null || !s.isLoading);
      expect([failed.error?.code, failed.status]).toEqual(["handler_error", "LoadingFirstPage"]);
      await mutate("remove", { id: boom });
      for (const query of [early, late]) {
        const recovered = await query.until((s) => s.error === null && !s.isLoading);
        expect([texts(recovered), recovered.status]).toEqual([["kept"], "Exhausted"]);
        query.hold();
      }
    });
  });
}
