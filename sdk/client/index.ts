/**
 * `platform/client` for browsers (and bundlers): `createClient(url)` with queries, mutations,
 * live subscriptions, storage, identity and React hooks on the client object. Node gets
 * `node.ts` through the package's `node` export condition.
 *
 * @example
 * const client = createClient<typeof app>("https://todo.example.com");
 * function Todos() {
 *   const todos = client.useQuery("list");
 *   const add = client.useMutation("add");
 *   ...
 * }
 */
import * as React from "react";
import type { AnyCapsuleApi, CapsuleApi } from "./api-types.js";
import { buildClient, type ClientOptions, type PlatformClient } from "./client.js";
import { type KeyValueStore, memoryStore, type SocketLike, type Transport } from "./transport.js";

export * from "./exports.js";

/** The browser globals the client reads (the SDK compiles without the DOM library). */
interface BrowserGlobals {
  localStorage?: {
    getItem(key: string): string | null;
    setItem(key: string, value: string): void;
    removeItem(key: string): void;
  };
  location?: { origin: string };
  WebSocket: new (url: string, protocols?: string[]) => SocketLike;
}
const browser = globalThis as unknown as BrowserGlobals;

function browserStore(): KeyValueStore {
  try {
    const storage = browser.localStorage;
    if (!storage) return memoryStore();
    storage.getItem("platform.probe");
    return {
      get: (key) => storage.getItem(key),
      set: (key, value) => (value === null ? storage.removeItem(key) : storage.setItem(key, value)),
    };
  } catch {
    return memoryStore();
  }
}

/**
 * A client of the deployment at `url` (default: the page's own origin, where `platform dev` and
 * hosted apps serve their client). Tokens are kept in `localStorage` per deployment origin.
 */
export function createClient<App extends CapsuleApi = AnyCapsuleApi>(
  url: string = browser.location?.origin ?? "",
  options: ClientOptions = {},
): PlatformClient<App> {
  const transport: Transport = {
    fetch: (input, init) => globalThis.fetch(input, init as RequestInit),
    socket: (target, protocols) => new browser.WebSocket(target, protocols),
    store: browserStore(),
    ...options.transport,
  };
  return buildClient<App>(url, transport, React, options);
}
