/**
 * The database: what one handler may read and one mutation may write, how long the host waits for its
 * database, and what the store keeps of each point-in-time view's reads for the next reader.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const DATABASE_LIMITS = {
  /** Rows handed back to one handler, all database calls together. */
  rowsReturned: 1000,
  /** Index entries scanned by one handler, including every `count()` match and each one its own deletes hide. */
  rowsRead: 5000,
  /** Row bytes read by one handler. */
  bytesRead: 4 * 1024 * 1024,
  /**
   * Gets by id and index scans (query terminals) one handler makes, found or not. A live query
   * keeps each as a key or range it watches and indexes them on the host's main thread, so they
   * are bounded even when they find nothing (a missing get reads no row). Ours; Convex allows 4096.
   */
  rangesRead: 4096,
  /**
   * Bytes of the keys and range bounds of one handler's gets and index scans (the read set a live
   * query keeps): a scan compared with a 1 MiB string holds it twice, found or not. Ours.
   */
  rangeBytesRead: 4 * 1024 * 1024,
  /**
   * Rows one mutation's scans may pass that other mutations committing with it (one group commit)
   * deleted; past them it fails `503 unavailable`, to be retried once they have committed. Its
   * own deletes count as rows read instead. Ours: an attacker's two mutations, one deleting 8,000
   * rows and one scanning past them again and again, held the main thread for seconds, charged
   * to no one's read budget.
   */
  rowsHiddenByGroup: 20_000,
  /** Rows one mutation writes (inserted, patched, replaced or deleted), each write counted. */
  rowsWritten: 8192,
  /**
   * `id()` values one mutation's writes check exist (each a read on the host's main thread,
   * outside the handler's CPU time): two per row written at most. Without it, rows of many `id()`
   * fields made one mutation check 258,000 references. Ours.
   */
  referencesChecked: 16_384,
  /**
   * Distinct values one deploy checks name a row, when it turns fields into `id("<t>")` fields
   * (each a key-only read). Ours: such a change to a table of millions of rows is refused and
   * done through a new field instead.
   */
  referencesCheckedPerDeploy: 1_000_000,
  /**
   * Bytes one mutation stores: each written row's JSON, once for the row and once for each of its
   * index entries (an entry holds a copy of its row, so scans read rows in one pass), and the keys
   * of those entries and of the counts they move (a delete's too), which it holds until its commit.
   */
  bytesWritten: 16 * 1024 * 1024,
  /**
   * Bytes of one index entry's key: the index's prefix, the row's values of its fields, its
   * creation time and id. PostgreSQL refuses a key over about 2,700 bytes, and a batch of writes
   * that held one failed every mutation in it with `500`; both stores refuse longer with `400`.
   */
  indexKeyBytes: 2048,
  /**
   * Row bytes one deployment may store, counted as {@link LIMITS.bytesWritten} counts them (each
   * row's JSON once for the row and once per index entry); a mutation that would store more is
   * refused with `413 quota_exceeded`, writes that free bytes always go through. Ours: free tiers
   * of hosted document databases hold 0.5 to 1 GiB.
   */
  rowBytesPerDeployment: 1024 * 1024 * 1024,
  /** Largest `numItems` of one `paginate()` call (ours: it can never exceed rowsReturned). */
  paginateMaxItems: 1000,
  /**
   * How long a mutation waits for the database, in ms: for its turn and the write lock before its
   * handler runs, then for its commit to be confirmed. Past it the call is answered
   * `503 unavailable` and the host goes on: a database that stopped answering never holds a
   * caller for good. Ours.
   */
  mutationWaitMs: 15_000,
  /**
   * How long a PostgreSQL round trip may go unanswered before the host asks the server, on a new
   * connection, whether it still answers; one that does not answer that within the same time is
   * taken as gone: the connections waiting on it are ended and their callers answered
   * `503 unavailable`, as are connections that cannot be made within it. Ours.
   */
  databaseSilenceMs: 10_000,
  /**
   * How often a host on PostgreSQL sends itself a broadcast to check that its listening connection
   * still hears; one not heard by the next check means the connection died without a word (a NAT
   * or balancer dropped it): the host listens again on a new one and re-reads what it may have
   * missed. Ours.
   */
  databaseListenerCheckMs: 15_000,
  /**
   * How long a host's PostgreSQL connection may be idle before the server starts probing that the
   * host is still there (TCP keepalive, asked for at each connection's start); it probes every
   * tenth of that and gives up after 6 unanswered, so the locks of a host that vanished without
   * closing its connections (power lost, network cut) are freed in about 2 minutes instead of the
   * server's default 2 hours. Not over Unix sockets, which need none. Ours.
   */
  databaseServerKeepaliveS: 60,
  /**
   * How often a host on PostgreSQL checks whether any deployment's record (its code, settings,
   * owner, or its deletion) changed without its announcement reaching it, and reads those again:
   * the staleness bound of a host's cached records even when an announcement is lost (one point
   * read when nothing changed). Ours.
   */
  deploymentRecordCheckMs: 15_000,
  /**
   * Bytes of the scans the embedded store keeps per point-in-time view for one developer (the
   * owner of the deployments read), so readers that start between the same two writes and scan the
   * same range are answered at once (host/db/kv/scan-memo.ts); the view after a write keeps the
   * scans whose ranges the write left alone. Ours.
   */
  scanMemoBytes: 1024 * 1024,
  /** Scans such a view keeps for one developer, however small. Ours. */
  scanMemoScans: 64,
  /**
   * Scans such a view keeps for all developers together: each one the next view may keep is
   * checked against the writes between them on the host's main thread, once per view. Ours.
   */
  scanMemoTotalScans: 512,
  /** Bytes such a view keeps for all developers together. Ours. */
  scanMemoTotalBytes: 16 * 1024 * 1024,
  /**
   * Point reads (a row by id, a stored count) a PostgreSQL view keeps for one developer, beside
   * its scans, so a reader of the same view reads them at once
   * (host/db/kv/postgres-scan-memos.ts): keys, and their bytes (as a scan's). Ours.
   */
  pointMemoKeys: 1024,
  pointMemoBytes: 512 * 1024,
  /** Point reads such a view keeps for all developers together, and their bytes. Ours. */
  pointMemoTotalKeys: 8192,
  pointMemoTotalBytes: 4 * 1024 * 1024,
} as const;
