import { LIMITS } from "../../../sdk/protocol/index.js";

/**
 * TCP keepalive on the host's end of every connection: a connection a NAT or balancer dropped
 * without a word is found dead by the kernel instead of waited on for the TCP timeout (about 15
 * minutes).
 */
export const KEEP_ALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 } as const;

/**
 * Asks the server's end of a connection for TCP keepalive too (`LIMITS.databaseServerKeepaliveS`
 * idle, then a probe every tenth of that, 6 unanswered): a host gone without closing its
 * connections (power lost, network cut) is found gone, and its transactions' locks freed, in
 * about two minutes instead of the server's default two hours. Run once a connection is made and
 * before it is used, not sent as startup options, which poolers such as PgBouncer refuse; ignored
 * over Unix sockets, which need none.
 */
export function serverKeepaliveSql(): string {
  const idle = LIMITS.databaseServerKeepaliveS;
  const interval = Math.max(1, Math.round(idle / 10));
  return `SET tcp_keepalives_idle = ${idle}; SET tcp_keepalives_interval = ${interval}; SET tcp_keepalives_count = 6`;
}
