/** PaginatedQuery's error state, on a stand-in connection: each page's failure counts until it answers. */
import { expect, it } from "vitest";
import { PlatformError } from "../values/index.js";
import { PaginatedQuery } from "./paginated-query.js";
import type { SubscriptionListener, SyncConnection } from "./sync-connection.js";

/** A connection whose subscriptions the test answers by hand, in subscription order. */
function standIn() {
  const listeners: SubscriptionListener[] = [];
  const connection = {
    subscribe: (_name: string, _argsJson: string, listener: SubscriptionListener) => {
      listeners.push(listener);
      return () => {};
    },
    onUserChange: () => () => {},
  } as unknown as SyncConnection;
  return { connection, listeners };
}

const page = (items: string[], isDone: boolean, continueCursor: string) => ({
  value: { page: items, isDone, continueCursor },
});

it("shows a page's error until that page answers again, whatever the other pages say", () => {
  const { connection, listeners } = standIn();
  const query = new PaginatedQuery<string>(connection, "list", {}, 2);
  query.subscribe(() => {});
  listeners[0]?.(page(["a", "b"], false, "c1"));
  query.loadMore(2);
  listeners[1]?.(page(["c", "d"], true, "c2"));
  const failure = new PlatformError("handler_error", "page one fails");
  listeners[0]?.({ error: failure });
  expect(query.getSnapshot()).toMatchObject({ error: failure, results: ["a", "b", "c", "d"] });
  // The second page answering (unchanged) does not hide the first page's failure.
  listeners[1]?.(page(["c", "d"], true, "c2"));
  expect(query.getSnapshot().error).toBe(failure);
  // The first page answers again, with the value it had: the error is gone, nothing resets.
  listeners[0]?.(page(["a", "b"], false, "c1"));
  expect(query.getSnapshot()).toMatchObject({
    error: null,
    results: ["a", "b", "c", "d"],
    status: "Exhausted",
  });
  expect(query.resets).toBe(0);
});

it("a query that does not answer a page gives the list an error saying so, and nothing throws", () => {
  const { connection, listeners } = standIn();
  const query = new PaginatedQuery<string>(connection, "stats", {}, 2);
  query.subscribe(() => {});
  for (const value of [{ total: 3 }, null, [1, 2], { page: "no", isDone: false, continueCursor: "c" }])
    expect(() => listeners[0]?.({ value })).not.toThrow();
  expect(query.getSnapshot()).toMatchObject({
    results: [],
    status: "LoadingFirstPage",
    error: {
      code: "bad_request",
      message:
        "Query stats does not answer a page ({ page, isDone, continueCursor }): a paginated query returns ctx.db.<table>...paginate(args.paginationOpts).",
    },
  });
  listeners[0]?.(page(["a"], true, "c1"));
  expect(query.getSnapshot()).toMatchObject({ results: ["a"], status: "Exhausted", error: null });
});
