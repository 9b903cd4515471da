/**
 * The subprotocols of `GET /api/sync`: a client with a token offers `platform`, then
 * {@link SYNC_PROTOCOL} and `platform-token.<token>`; the host selects {@link SYNC_PROTOCOL} and
 * never echoes the token. Browsers cannot set an upgrade's other headers, and a URL's query (the
 * older `?platform_token=`) is written to proxies' access logs. Hosts before this one select the
 * first offered, `platform`, reading no token there: the client then opens again with the token
 * in the URL.
 */
export const SYNC_PROTOCOL = "platform.sync";
export const SYNC_TOKEN_PROTOCOL_PREFIX = "platform-token.";
const OFFERED_FIRST = "platform";

/**
 * The subprotocols a client offers with `token`, or undefined when the token cannot travel as
 * one (a subprotocol is an HTTP token: letters, digits and `!#$%&'*+-.^_`|~`): then it goes in the URL.
 */
export function syncProtocolsFor(token: string): string[] | undefined {
  return /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(token)
    ? [OFFERED_FIRST, SYNC_PROTOCOL, `${SYNC_TOKEN_PROTOCOL_PREFIX}${token}`]
    : undefined;
}
