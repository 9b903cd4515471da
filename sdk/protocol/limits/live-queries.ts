/**
 * Live queries: their re-runs under way, and what their results and read sets may hold in the host's
 * memory, per deployment, per client address and host-wide.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const LIVE_QUERY_LIMITS = {
  /**
   * Live-query re-runs of one deployment under way at once; the others wait their turn in the
   * host's memory, first come first served, so a commit touching thousands of subscriptions
   * neither fills the deployment's call queue (its other calls still get in) nor runs ahead of
   * other deployments. Ours.
   */
  liveRerunsInFlight: 16,
  /**
   * The main thread's work a commit may spend finding the live queries it touched
   * (host/live/read-set-index.ts): tree nodes and hits of its written keys stabbed into the ranges
   * its deployment's subscriptions watch, then, past that, checks of each range against the sorted
   * written keys; past both, every subscription of the deployment is touched (re-run, in its own
   * turn). Ours: a deployment's subscriptions may watch some 500,000 ranges, and a commit of 1,024
   * rows into 384,000 of them held the main thread 0.4 s for every tenant (an attack review,
   * 2026-12-07); these take a few ms.
   */
  liveCommitVisits: 16_384,
  liveCommitChecks: 131_072,
  /**
   * What one deployment's live queries may hold in the host's memory, all shared subscriptions
   * together: each one's latest result (JSON characters) and the keys and ranges its run read. A
   * run that would take its deployment past it gives its subscribers `limit_exceeded` instead and
   * runs again as room frees or on the deployment's next commit. Ours: as much as the deployment's isolate heap.
   */
  liveStateBytes: 128 * 1024 * 1024,
  /**
   * What the subscriptions one client address started on a deployment may hold of its
   * `liveStateBytes`: a client subscribing with ever new arguments fills its quarter, not the
   * deployment's whole share (40 subscriptions of about 2 KB filled it and refused every other
   * user's). A subscription shared with others counts for the client that started it while it
   * stays and has room, else for another subscribed client with room (host/live/live-state.ts). Ours.
   */
  liveStateBytesPerClient: 32 * 1024 * 1024,
  /**
   * What every deployment's live queries may hold together before a deployment may grow only to
   * its even share (this divided among the deployments holding any), and all never past twice
   * this, however many tenants fill theirs. Ours.
   */
  liveStateHostBytes: 2 * 1024 * 1024 * 1024,
} as const;
