/**
 * What the client needs from its environment, so one client runs in browsers and in Node: a
 * `fetch`, a WebSocket constructor and a small key-value store for tokens. `index.ts` fills them
 * from the browser, `node.ts` from Node (with `*.localhost` resolved to loopback, as browsers do).
 */

/** The part of `fetch` the client uses. */
export type FetchFunction = (
  url: string,
  init: {
    method: string;
    headers: Record<string, string>;
    body?: string | Blob | Uint8Array;
    /** Aborts the request (the call's time ran out): a `fetch` should stop then, and free its connection. */
    signal?: AbortSignal;
  },
) => Promise<Response>;

/** The part of the WebSocket interface the client uses (browser `WebSocket` and `ws` both fit). */
export interface SocketLike {
  readonly readyState: number;
  /** The subprotocol the host selected ("" for none). */
  readonly protocol?: string;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

/**
 * Opens a WebSocket to `url`, offering `protocols` (the subprotocols that carry the client's token:
 * `new WebSocket(url, protocols)`). A factory that declares no second parameter gets the token in
 * the URL instead (`?platform_token=`), which proxies' access logs keep.
 */
export type SocketFactory = (url: string, protocols?: string[]) => SocketLike;

/** Where tokens are kept between page loads (browser: `localStorage`; Node: memory). */
export interface KeyValueStore {
  get(key: string): string | null;
  set(key: string, value: string | null): void;
}

/** Everything environment-specific the client uses. */
export interface Transport {
  fetch: FetchFunction;
  socket: SocketFactory;
  store: KeyValueStore;
}

/** A store that forgets everything when the process ends. */
export function memoryStore(): KeyValueStore {
  const values = new Map<string, string>();
  return {
    get: (key) => values.get(key) ?? null,
    set: (key, value) => {
      if (value === null) values.delete(key);
      else values.set(key, value);
    },
  };
}
