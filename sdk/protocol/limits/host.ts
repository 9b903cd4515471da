/**
 * The host process: quarantine of code that crashed it, the supervisor's restarts, readiness and
 * metrics checks, and shutdown.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const HOST_LIMITS = {
  /**
   * How long code that crashed the host (its bundle, its deployment, and its developer once two of
   * theirs did) is refused (`503 unavailable`, `Retry-After`) the first time, unless `platform
   * host --quarantine` says otherwise; each repeat doubles it, up to `quarantineMaxMs`, and each
   * `quarantineMaxMs` without one halves it again. Ours.
   */
  quarantineFirstMs: 5000,
  quarantineMaxMs: 10 * 60_000,
  /** Server processes in a row that may fail to start before `platform host` gives up. Ours. */
  serverStartAttempts: 5,
  /**
   * How long a server process may send no heartbeat before the supervisor kills and replaces it:
   * its main thread is blocked or the process stopped. It sends one every tenth of this from its
   * event loop; while it opens the database (told to start, not yet listening) it may be silent
   * six times as long. Ours: a turn of a healthy host's event loop takes milliseconds.
   */
  serverSilenceMs: 10_000,
  /**
   * How long `GET /readyz` waits for the database and the blob store each before it answers
   * `503`: a load balancer's probe must get an answer, not hang with the backend. Ours.
   */
  readinessCheckMs: 2000,
  /**
   * `GET /metrics`: how long a scrape waits for the database to read storage usage, and for how
   * many owners at most (one series each), so a scrape answers even while the database hangs. Ours.
   */
  metricsReadMs: 2000,
  metricsStorageOwners: 1000,
  /**
   * How long a host shutting down (`SIGTERM`) waits for calls in flight beyond the wall limit of a
   * handler (`handlerWallMs`) before it closes the remaining connections. Ours.
   */
  drainGraceMs: 5000,
  /**
   * File descriptors of the process's open-files limit kept from client connections: for the
   * database's files, stored objects, code caches and PostgreSQL connections. The host takes at
   * most the rest of the limit in connections, sockets of every kind together; past it a new
   * connection is closed at once. Ours.
   */
  hostFdReserve: 1024,
  /**
   * Client connections one address (an IPv6 /64) may hold on a host at once, sockets of every kind
   * together, unless the host trusts a proxy (`--trust-proxy`: every connection comes from it).
   * Ours: above `syncSocketsPerClient` with room for many users behind one NAT.
   */
  connectionsPerAddress: 4096,
} as const;
