/**
 * Type tests: compiled by `npm run typecheck`, never run. A client's result types are what
 * arrives over JSON, not what the handler returned.
 */
import type { Id } from "../server/index.js";
import type {
  AnyCapsuleApi,
  CapsuleApi,
  PaginatedItem,
  PaginatedQueryName,
  QueryResultOf,
} from "./api-types.js";

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Each assignable to the other (a mapped object type is not `Equals` to the literal it matches). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
function assert<_T extends true>(): void {}

interface App extends CapsuleApi {
  definition: {
    queries: {
      date: () => Promise<Date>;
      map: () => Promise<Map<string, number>>;
      nothing: () => Promise<undefined>;
      maybe: () => Promise<{ id: Id<"items">; at: Date } | undefined>;
      row: () => Promise<{ id: Id<"items">; text: string; note?: string; skip: undefined; run: () => void }>;
      list: () => Promise<Array<string | undefined>>;
      feed: (
        ctx: unknown,
        args: { paginationOpts: { cursor: string | null; numItems: number } },
      ) => Promise<{ page: Array<{ id: Id<"items">; at: Date }>; isDone: boolean; continueCursor: string }>;
      loose: () => Promise<unknown>;
      // biome-ignore lint/suspicious/noExplicitAny: an untyped handler stays untyped.
      untyped: () => Promise<any>;
    };
  };
}

assert<Equals<QueryResultOf<App, "date">, string>>();
assert<Equals<QueryResultOf<App, "map">, Record<string, never>>>();
assert<Equals<QueryResultOf<App, "nothing">, null>>();
assert<Same<QueryResultOf<App, "maybe">, { id: Id<"items">; at: string } | null>>();
assert<Same<QueryResultOf<App, "row">, { id: Id<"items">; text: string; note?: string }>>();
assert<Equals<keyof QueryResultOf<App, "row">, "id" | "text" | "note">>();
assert<Same<QueryResultOf<App, "list">, Array<string | null>>>();
assert<Equals<QueryResultOf<App, "loose">, unknown>>();
// biome-ignore lint/suspicious/noExplicitAny: an untyped handler stays untyped.
assert<Equals<QueryResultOf<App, "untyped">, any>>();

// Only a query that answers a page is a paginated query's name (an untyped client takes any).
assert<Equals<PaginatedQueryName<App>, "feed" | "untyped">>();
assert<Same<PaginatedItem<App, "feed">, { id: Id<"items">; at: string }>>();
assert<Equals<PaginatedQueryName<AnyCapsuleApi>, string>>();
