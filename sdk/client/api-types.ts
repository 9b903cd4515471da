/**
 * Types that let a client follow a capsule: `createClient<typeof app>(url)` checks query and
 * mutation names and arguments and types their results. Structural, so the client never imports
 * `platform/server`; without a type argument everything is loosely typed.
 */
import type { PaginationResult } from "../protocol/index.js";

// biome-ignore lint/suspicious/noExplicitAny: a handler of any capsule, as the client sees it.
type AnyHandler = (ctx: any, args: any) => unknown;

/** The part of a capsule (`typeof app`) a client reads its types from. */
export interface CapsuleApi {
  definition: {
    queries?: Record<string, AnyHandler>;
    mutations?: Record<string, AnyHandler>;
  };
}

/** A capsule about which nothing is known: any name, any arguments, any result. */
export interface AnyCapsuleApi extends CapsuleApi {
  definition: {
    // biome-ignore lint/suspicious/noExplicitAny: untyped clients accept anything.
    queries: Record<string, (ctx: any, args: any) => any>;
    // biome-ignore lint/suspicious/noExplicitAny: untyped clients accept anything.
    mutations: Record<string, (ctx: any, args: any) => any>;
  };
}

type Queries<App extends CapsuleApi> = NonNullable<App["definition"]["queries"]>;
type Mutations<App extends CapsuleApi> = NonNullable<App["definition"]["mutations"]>;

/** The names of the capsule's queries. */
export type QueryName<App extends CapsuleApi> = keyof Queries<App> & string;
/** The names of the capsule's mutations. */
export type MutationName<App extends CapsuleApi> = keyof Mutations<App> & string;

/** A handler's arguments (an object, or nothing for a handler that takes none). */
export type ArgsOf<H> = H extends (ctx: never, args: infer A) => unknown
  ? unknown extends A
    ? Record<string, unknown> | undefined
    : A
  : never;
/** A value no JSON holds: dropped from an object, `null` in an array or as a whole answer. */
type Unencodable = undefined | symbol | ((...args: never[]) => unknown);

/**
 * What a value becomes on its way to a client, as `JSON.stringify` then `JSON.parse` make it: a
 * `Date` (anything with `toJSON`) its JSON, a `Map` or `Set` an empty object, `undefined` and
 * functions gone from objects and `null` in arrays. So a query answering `new Date()` types as the
 * string that arrives, not as a `Date` whose methods would fail at run time.
 */
export type Jsonified<T> = 0 extends 1 & T
  ? T
  : unknown extends T
    ? T
    : T extends { toJSON(): infer J }
      ? Jsonified<J>
      : T extends string | number | boolean | null
        ? T
        : T extends ReadonlyMap<unknown, unknown> | ReadonlySet<unknown>
          ? Record<string, never>
          : T extends readonly unknown[]
            ? { -readonly [K in keyof T]: Answer<T[K]> }
            : T extends object
              ? { -readonly [K in keyof T as T[K] extends Unencodable ? never : K]: Jsonified<T[K]> }
              : T;

/** A whole answer as it arrives: what JSON cannot hold is `null`, the rest {@link Jsonified}. */
type Answer<T> = T extends Unencodable ? null : Jsonified<T>;

/** What a handler's promise resolves to, as the client receives it. */
export type ResultOf<H> = H extends (...args: never[]) => infer R ? Answer<Awaited<R>> : never;

/** Arguments of query `N`. */
export type QueryArgs<App extends CapsuleApi, N extends QueryName<App>> = ArgsOf<Queries<App>[N]>;
/** Result of query `N`. */
export type QueryResultOf<App extends CapsuleApi, N extends QueryName<App>> = ResultOf<Queries<App>[N]>;
/** Arguments of mutation `N`. */
export type MutationArgs<App extends CapsuleApi, N extends MutationName<App>> = ArgsOf<Mutations<App>[N]>;
/** Result of mutation `N`. */
export type MutationResultOf<App extends CapsuleApi, N extends MutationName<App>> = ResultOf<
  Mutations<App>[N]
>;

/**
 * The names of the capsule's queries that answer a page (`ctx.db.<table>...paginate(...)`), the
 * only ones `usePaginatedQuery` and `paginatedQuery` take. Untyped clients take any name.
 */
export type PaginatedQueryName<App extends CapsuleApi> = {
  [N in QueryName<App>]: QueryResultOf<App, N> extends PaginationResult<unknown> ? N : never;
}[QueryName<App>];

/** A paginated query's own arguments, without the `paginationOpts` the client supplies. */
export type PaginatedArgs<App extends CapsuleApi, N extends QueryName<App>> = Omit<
  NonNullable<QueryArgs<App, N>>,
  "paginationOpts"
>;
/** The item type of a paginated query (its result is `{ page, isDone, continueCursor }`). */
export type PaginatedItem<App extends CapsuleApi, N extends QueryName<App>> =
  QueryResultOf<App, N> extends PaginationResult<infer Item> ? Item : unknown;
