import type pg from "pg";
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

/**
 * Asks a connection just made for the server's keepalive (`send` runs the statement on it) before
 * anyone uses it. A server that refuses the statement leaves the connection as it was; one lost
 * meanwhile (or `timedOut`: its connect ran out of time) fails, as a lost handshake does. Until a
 * pool takes the connection nobody listens for its errors: one unheard here ended the process.
 */
export async function askServerKeepalive(
  client: pg.Client,
  send: (sql: string) => Promise<unknown>,
  timedOut: () => boolean,
): Promise<void> {
  let lost: unknown;
  const onError = (error: unknown) => {
    lost ??= error;
  };
  client.on("error", onError);
  try {
    await send(serverKeepaliveSql());
  } catch (error) {
    lost ??= timedOut() || !isQueryable(client) ? error : undefined;
  } finally {
    client.off("error", onError);
  }
  if (lost !== undefined) throw lost;
}

/** False once pg took the connection as broken (it refuses queries from then on). */
function isQueryable(client: pg.Client): boolean {
  return (client as unknown as { _queryable?: boolean })._queryable !== false;
}
