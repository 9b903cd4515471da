/**
 * `platform/client` in Node (the package's `node` export condition): the same client as in
 * browsers, on Node's transport (`*.localhost` resolved to loopback, `ws` WebSockets, tokens in
 * memory). The React hooks work when the react package is installed.
 */
import type { AnyCapsuleApi, CapsuleApi } from "./api-types.js";
import { buildClient, type ClientOptions, type PlatformClient } from "./client.js";
import { nodeTransport } from "./node-transport.js";
import type { ReactModuleRef } from "./react-types.js";

export * from "./exports.js";
export { localhostLookup, nodeFetch } from "./node-transport.js";

const react: ReactModuleRef | null = await import("react").then(
  (module) => (module as { default?: ReactModuleRef }).default ?? module,
  () => null,
);

/** A client of the deployment at `url` (an http(s) origin, `*.localhost` included). */
export function createClient<App extends CapsuleApi = AnyCapsuleApi>(
  url: string,
  options: ClientOptions = {},
): PlatformClient<App> {
  return buildClient<App>(url, { ...nodeTransport(), ...options.transport }, react, options);
}
