/**
 * The subprotocols of `GET /api/sync`: a client offers {@link SYNC_PROTOCOL} and, when it has a
 * token, `platform-token.<token>` beside it; the host selects {@link SYNC_PROTOCOL} and never
 * echoes the token. Browsers cannot set an upgrade's other headers, and a URL's query (the older
 * `?platform_token=`) is written to proxies' access logs.
 */
export const SYNC_PROTOCOL = "platform";
export const SYNC_TOKEN_PROTOCOL_PREFIX = "platform-token.";

/**
 * The subprotocols a client offers with `token`, or undefined when the token cannot travel as
 * one (a subprotocol is an HTTP token: letters, digits and `!#$%&'*+-.^_`|~`): then it goes in the URL.
 */
export function syncProtocolsFor(token: string): string[] | undefined {
  return /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(token)
    ? [SYNC_PROTOCOL, `${SYNC_TOKEN_PROTOCOL_PREFIX}${token}`]
    : undefined;
}
