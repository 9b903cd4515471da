/**
 * The public types of the React hooks on every client. They restate what they need of React
 * instead of importing `react`, so an app that never uses React type-checks `platform/client`
 * without `@types/react`; `react-hooks.ts` implements them with React's own types.
 */
import type {
  AnyCapsuleApi,
  CapsuleApi,
  MutationArgs,
  MutationName,
  MutationResultOf,
  PaginatedArgs,
  PaginatedItem,
  PaginatedQueryName,
  QueryArgs,
  QueryName,
  QueryResultOf,
} from "./api-types.js";
import type { AuthState } from "./auth-types.js";
import type { PaginatedQueryState } from "./paginated-query.js";

/**
 * The React module as a client holds it: opaque here (only the hooks look inside), so that the
 * client's declarations never name React's types.
 */
export type ReactModuleRef = object;

/**
 * What a component renders: React's `ReactElement<any, any>` restated (React's own elements fit it
 * and it fits wherever React expects a node), so JSX accepts `<client.SignInButton />`.
 */
export interface RenderedElement {
  // biome-ignore lint/suspicious/noExplicitAny: the same as React's ReactElement<any, any>, which JSX requires
  type: any;
  // biome-ignore lint/suspicious/noExplicitAny: the same as React's ReactElement<any, any>, which JSX requires
  props: any;
  key: string | null;
}

/** Props of the sign-in button. */
export interface SignInButtonProps {
  /** Text of the button (default "Sign in"). */
  label?: string;
  className?: string;
}

/** The hooks and components on every client (docs/client.md). */
export interface ReactHooks<App extends CapsuleApi = AnyCapsuleApi> {
  /**
   * The live result of query `name`: undefined while loading, then updated whenever it changes.
   * Pass `"skip"` to subscribe to nothing. While the query fails, the hook throws its
   * `PlatformError` (to the nearest error boundary), as Convex's `useQuery` does; a boundary that
   * resets renders the query's current outcome: the error again while it lasts, the value once
   * the query answers again (the host pushes that recovery to subscribers; `client.subscribe`
   * receives it without any reset).
   */
  useQuery<N extends QueryName<App>>(
    name: N,
    args?: QueryArgs<App, N> | "skip",
  ): QueryResultOf<App, N> | undefined;
  /** A function running mutation `name` with read-your-writes. */
  useMutation<N extends MutationName<App>>(
    name: N,
  ): (args?: MutationArgs<App, N>) => Promise<MutationResultOf<App, N>>;
  /**
   * A paginated query: supplies `paginationOpts` to the query, keeps every loaded page subscribed,
   * accumulates their items, and resets to the first page after a reactive invalidation. While a
   * page fails, the hook throws that page's `PlatformError` (to the nearest error boundary), like
   * `useQuery`; a boundary that resets shows the pages again once they answer.
   * `client.paginatedQuery` gives the same state, `error` included, without throwing.
   */
  usePaginatedQuery<N extends PaginatedQueryName<App>>(
    name: N,
    args: PaginatedArgs<App, N>,
    options: { initialNumItems: number },
  ): PaginatedQueryState<PaginatedItem<App, N>>;
  /** `{ isLoading, isSignedIn, identity, error }`, updated as sign-in state changes. */
  useAuth(): AuthState;
  /** A button that runs the email-code sign-in (email, then code); shows the account when signed in. */
  SignInButton: (props: SignInButtonProps) => RenderedElement;
}
