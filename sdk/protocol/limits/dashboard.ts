/**
 * The dashboard: its sign-in and where it sends a browser back to, its data browser, and the
 * per-handler figures it shows.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const DASHBOARD_LIMITS = {
  /**
   * Dashboard sign-ins (with a token, right or wrong) one client address may make per minute.
   * Ours: each stores a session for 12 hours, and a guessed operator token would open every tenant.
   */
  dashboardSignInsPerMinute: 30,
  /**
   * Characters of the path the dashboard's sign-in sends a browser back to (longer ones go to the
   * dashboard's start). Ours: the path rides in a `Location` header, percent-encoded once more on
   * the way to sign-in, and a proxy in front takes a response head of 4-8 KiB at most: nginx
   * answers 502 to a longer one and, with several hosts in its upstream, takes the host out of
   * rotation for 10 s, for every tenant.
   */
  redirectPathChars: 1024,
  /** Rows of one page of the dashboard's data browser (`GET /v1/deploys/<id>/tables/<t>/rows`). Ours. */
  dashboardPageRows: 100,
  /**
   * Index entries the data browser walks to count a range that no stored count answers (a range
   * bound, or an uncounted index); beyond it the count is shown as "more than". Ours.
   */
  dashboardCountScan: 10_000,
  /** Minutes of per-handler figures a host process keeps in memory for the dashboard. Ours. */
  handlerStatsMinutes: 60,
  /** Handlers per deployment with figures kept; calls of further ones are not counted. Ours. */
  handlerStatsHandlers: 256,
} as const;
