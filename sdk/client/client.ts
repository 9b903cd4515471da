import type { PlatformError } from "../values/index.js";
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
import { AuthSession } from "./auth-session.js";
import type { ClientAuth } from "./auth-types.js";
import { argsJson } from "./call-args.js";
import { callWithAuth } from "./http-call.js";
import { newIdempotencyKey } from "./idempotency-key.js";
import { PaginatedQuery } from "./paginated-query.js";
import { createHooks } from "./react-hooks.js";
import type { ReactHooks, ReactModuleRef } from "./react-types.js";
import { createStorageClient, type StorageClient } from "./storage-client.js";
import { type ConnectionState, SyncConnection } from "./sync-connection.js";
import type { Transport } from "./transport.js";

/** Options of `createClient`. */
export interface ClientOptions {
  /**
   * Start a protected guest session on first use, so the app works before sign-in and the guest's
   * data moves to the account at sign-in (default true).
   */
  guest?: boolean;
  /** Replaces parts of the environment (`fetch`, WebSocket, token store). */
  transport?: Partial<Transport>;
}

/**
 * A client of one deployment (docs/client.md): one-shot queries and mutations over HTTP,
 * live subscriptions and read-your-writes mutations over one WebSocket, object storage, identity,
 * and React hooks on the object itself (`client.useQuery`, ...).
 */
export interface PlatformClient<App extends CapsuleApi = AnyCapsuleApi> extends ReactHooks<App> {
  /** The deployment's origin. */
  readonly url: string;
  /** Runs query `name` once over HTTP. */
  query<N extends QueryName<App>>(name: N, args?: QueryArgs<App, N>): Promise<QueryResultOf<App, N>>;
  /**
   * Runs mutation `name`. While the client has live subscriptions it goes over their socket and
   * resolves only after they show its effects (read-your-writes); otherwise over HTTP.
   */
  mutation<N extends MutationName<App>>(
    name: N,
    args?: MutationArgs<App, N>,
  ): Promise<MutationResultOf<App, N>>;
  /**
   * Subscribes to query `name`: the current outcome at once (when known) and every change after
   * it, `onValue` for a result, `onError` while it fails; a query that answers again after failing
   * calls `onValue`, even with the value it had before. Returns the unsubscribe function.
   */
  subscribe<N extends QueryName<App>>(
    name: N,
    args: QueryArgs<App, N>,
    onValue: (value: QueryResultOf<App, N>) => void,
    onError?: (error: PlatformError) => void,
  ): () => void;
  /** A paginated subscription (what `usePaginatedQuery` runs), for use outside React. */
  paginatedQuery<N extends PaginatedQueryName<App>>(
    name: N,
    args: PaginatedArgs<App, N>,
    options: { initialNumItems: number },
  ): PaginatedQuery<PaginatedItem<App, N>>;
  storage: StorageClient;
  auth: ClientAuth;
  /** Runs the last failed sign-in or renewal step again. */
  retryAuth(): Promise<void>;
  /** The live connection's state. */
  readonly connectionState: ConnectionState;
  onConnectionStateChange(listener: (state: ConnectionState) => void): () => void;
  /** Closes the connection and stops timers. */
  close(): void;
}

function socketUrl(baseUrl: string): string {
  return `${baseUrl.replace(/^http/, "ws")}/api/sync`;
}

/**
 * Builds a client on `transport`. `index.ts` and `node.ts` call it with the transport of their
 * environment and React when it is available.
 */
export function buildClient<App extends CapsuleApi = AnyCapsuleApi>(
  url: string,
  transport: Transport,
  react: ReactModuleRef | null,
  options: ClientOptions = {},
): PlatformClient<App> {
  let base: URL | undefined;
  try {
    base = new URL(String(url));
  } catch {}
  if (base?.protocol !== "http:" && base?.protocol !== "https:")
    throw new TypeError(
      `createClient needs the deployment's http(s) origin, as createClient("http://localhost:3000"), not ${JSON.stringify(url) ?? "nothing"}${url ? "" : " (outside a page there is no location to take it from)"}.`,
    );
  const baseUrl = base.origin;
  const session = new AuthSession(baseUrl, transport.fetch, transport.store, {
    guest: options.guest ?? true,
  });
  const connection = new SyncConnection(
    socketUrl(baseUrl),
    transport.socket,
    () => session.validToken(),
    (refused) => session.handleUnauthorized(refused),
    () => session.user(),
  );
  session.onTokenChange(() => connection.reconnect());
  // Queries may run twice; a mutation carries a new random idempotency key, which makes a retry
  // after a lost answer apply at most once (docs/client.md "Retries").
  const call = async (kind: "query" | "mutation", name: string, body: string) => {
    const answer = (await callWithAuth(
      transport.fetch,
      session,
      `${baseUrl}/api/${kind}/${encodeURIComponent(name)}`,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(kind === "mutation" ? { "idempotency-key": newIdempotencyKey() } : {}),
        },
        body,
        retryUnanswered: true,
      },
    )) as { value: unknown };
    return answer.value;
  };
  const auth: ClientAuth = {
    getState: () => session.getState(),
    subscribe: (listener) => session.subscribe(listener),
    ready: () => session.ready(),
    signInAsGuest: () => session.signInAsGuest(),
    startEmailSignIn: (email) => session.startEmailSignIn(email),
    verifyEmailCode: (email, code) => session.verifyEmailCode(email, code),
    signInWithIdToken: (idToken) => session.signInWithIdToken(idToken),
    devSignIn: (email) => session.devSignIn(email),
    signOut: () => session.signOut(),
    token: () => session.validToken(),
  };
  const client = {
    url: baseUrl,
    query: async (name: string, args?: unknown) => call("query", name, argsJson(args, `query ${name}`)),
    mutation: async (name: string, args?: unknown) => {
      const json = argsJson(args, `mutation ${name}`);
      return connection.wanted || connection.state === "open"
        ? connection.mutation(name, json)
        : call("mutation", name, json);
    },
    subscribe: (
      name: string,
      args: unknown,
      onValue: (value: unknown) => void,
      onError?: (error: PlatformError) => void,
    ) =>
      connection.subscribe(name, argsJson(args, `query ${name}`), (result) => {
        if ("error" in result) onError?.(result.error);
        else onValue(result.value);
      }),
    paginatedQuery: (name: string, args: Record<string, unknown>, paging: { initialNumItems: number }) => {
      argsJson(args, `query ${name}`);
      return new PaginatedQuery(connection, name, args ?? {}, paging.initialNumItems);
    },
    storage: createStorageClient(baseUrl, transport.fetch, session),
    auth,
    retryAuth: () => session.retry(),
    get connectionState() {
      return connection.state;
    },
    onConnectionStateChange: (listener: (state: ConnectionState) => void) =>
      connection.onStateChange(listener),
    close: () => {
      connection.close();
      session.close();
    },
  };
  const hooks = createHooks(react, {
    connection,
    auth,
    mutation: client.mutation,
    paginatedQuery: client.paginatedQuery,
  });
  return Object.assign(client, hooks) as unknown as PlatformClient<App>;
}
