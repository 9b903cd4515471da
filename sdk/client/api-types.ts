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
/** What a handler's promise resolves to. */
export type ResultOf<H> = H extends (...args: never[]) => infer R ? Awaited<R> : never;

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

/** A paginated query's own arguments, without the `paginationOpts` the client supplies. */
export type PaginatedArgs<App extends CapsuleApi, N extends QueryName<App>> = Omit<
  NonNullable<QueryArgs<App, N>>,
  "paginationOpts"
>;
/** The item type of a paginated query (its result is `{ page, isDone, continueCursor }`). */
export type PaginatedItem<App extends CapsuleApi, N extends QueryName<App>> =
  QueryResultOf<App, N> extends PaginationResult<infer Item> ? Item : unknown;
