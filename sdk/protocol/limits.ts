/**
 * Every limit of the platform, as data. Host, runtime, CLI and docs import this one object so a
 * number is never written twice. Values are the documented ones (docs/limits.md); "Ours" marks limits of this platform.
 */
export const LIMITS = {
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
   * Platform calls (database calls and log lines, answered or refused) one handler execution may
   * make; the next one fails the execution with `limit_exceeded`. Ours: a call that fails its
   * checks (an id no row can have) reads nothing and was free, and 20,000 of them held the main
   * thread 0.93 s a request. Room for every row read and written within their own limits.
   */
  platformCallsPerHandler: 16_384,
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
  /**
   * Deployments one developer may own: each holds a database of its own (up to
   * rowBytesPerDeployment), so without a bound one developer could fill the disk every tenant's
   * data is on. The operator creates more for a developer past it. Ours.
   */
  deploymentsPerDeveloper: 100,
  /** Largest `numItems` of one `paginate()` call (ours: it can never exceed rowsReturned). */
  paginateMaxItems: 1000,
  /** One uploaded file. */
  fileSize: 5 * 1024 * 1024,
  /** Stored bytes per developer over all deployments. */
  storagePerDeveloper: 100 * 1024 * 1024,
  /**
   * The least one stored file counts against {@link LIMITS.storagePerDeveloper}, whatever its size:
   * each file costs the host a record and a file on disk (an inode, a block). Ours: without it, one
   * client stored 3,000 empty files in 3 s, counted as nothing.
   */
  storageBytesPerFile: 4096,
  /**
   * How long the script check of one SVG or XML file may take on its own thread (linear, about
   * 40 ms a MB), and the bytes of files that may wait for it, all deployments together and one
   * deployment's: beyond any, `503 unavailable` (a download of an SVG stored before the check's
   * version was kept is served as an attachment instead). Ours.
   */
  markupCheckMs: 30_000,
  markupCheckQueueBytes: 64 * 1024 * 1024,
  markupCheckQueueBytesEach: 16 * 1024 * 1024,
  /** Newest files shown by the inspect route and `platform storage list`. */
  listingSize: 500,
  /** `Cache-Control: max-age` of public downloads on unrestricted apps. */
  publicCacheSeconds: 3600,
  /** Heap of one deployment's isolate, in MiB (docs/limits.md). */
  isolateMemoryMb: 128,
  /** CPU time one handler may use, in ms (watchdog on the isolate's CPU clock). */
  handlerCpuMs: 1000,
  /** Wall time one handler may take, in ms, including database waits. */
  handlerWallMs: 15_000,
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
  /** Largest request body for queries, mutations and endpoints. */
  requestBodyBytes: 1024 * 1024,
  /**
   * Queries, mutations and endpoints one capsule may declare, together. Ours: a call looks its
   * handler up among them, and a miss looks for the nearest name; a declaration of 120,000 names
   * (within its 8 MiB) held the host's main thread 10 s on every call of a name it lacked.
   */
  functionsPerCapsule: 1000,
  /**
   * Bytes of request bodies one client address may have arriving at once, all its requests
   * together (`429` beyond, while quotas are on), and the host in all (`503` beyond). A body is
   * kept in memory while it arrives, and a client may send one slowly: without these, one address
   * holding a thousand connections, each a byte short of its body, held a gigabyte. Ours.
   */
  requestBodyBytesArrivingPerClient: 64 * 1024 * 1024,
  requestBodyBytesArriving: 512 * 1024 * 1024,
  /**
   * JSON bodies of the operator API over this many bytes (a deploy's, up to 60 MB) are checked and
   * parsed on a thread of their own, where every caller's take turns: on the main thread a 60 MB
   * deploy body held every tenant's requests about 140 ms, and a developer may deploy in a loop.
   * How long one parse may take there, and the bytes of bodies that may wait for it, all callers
   * together and one caller's (beyond, `503 unavailable`). Ours.
   */
  jsonParsedOffThreadBytes: 1024 * 1024,
  /**
   * Arguments of queries and mutations over this many bytes are checked on that JSON thread, off
   * the main thread, in their caller's turn: a 500 KB body of 65,000 short members took 16-19 ms of the main thread to
   * check, and 8 connections of one client held it 99% busy. Ours.
   */
  jsonCheckedOffThreadBytes: 32 * 1024,
  jsonParseMs: 30_000,
  jsonParseQueueBytes: 256 * 1024 * 1024,
  jsonParseQueueBytesEach: 64 * 1024 * 1024,
  /**
   * Bytes of answers waiting to be read by one client address, all its connections together
   * (`429` to its next requests, while quotas are on), and by everyone (`503`). An answer is held
   * in memory until the client reads it: 60 connections that never read an 8 MB answer held
   * 1.5 GB. Ours.
   */
  answerBytesUnsentPerClient: 64 * 1024 * 1024,
  answerBytesUnsent: 512 * 1024 * 1024,
  /** How long an answer may wait to be read before its connection is closed (ms). Ours. */
  answerUnsentMs: 120_000,
  /**
   * How long an unread answer or an arriving body must have stood still before the host, full,
   * may drop it for an address within an even share (host/http/fair-shares.ts; ms). Ours.
   */
  heldStalledMs: 1000,
  /**
   * What an unread answer or an arriving body must move to count as moving, not standing still
   * (bytes; read by its client, or arrived from it): this, or `1 / heldMovingParts` of its bytes
   * when that is more. A trickle of a byte a second kept a client's holding from ever standing
   * still, so it was never dropped for others; 1 KiB a second still held 64 MiB. Ours.
   */
  heldMovingBytes: 1024,
  heldMovingParts: 300,
  /**
   * An OpenID Connect issuer's JWKS: bytes read of it, keys taken from it, and how long after a
   * failed fetch the next one waits (ms; the last good JWKS serves meanwhile, see below). Ours.
   */
  jwksBytes: 1024 * 1024,
  jwksKeys: 100,
  jwksRetryMs: 30_000,
  /** How long after its fetch the last good JWKS still serves while fetches fail (ms). Ours. */
  jwksStaleMs: 60 * 60 * 1000,
  /** Largest JSON value a handler may return, in characters (an endpoint's answer: head and body). */
  resultBytes: 8 * 1024 * 1024,
  /**
   * Characters of a capsule's declaration (schema, handler names, endpoints, auth), which every
   * deploy parses and the deployment's record keeps: about 1,400 tables of 30 fields and a few
   * indexes. Ours: an export's `deployment.json` repeats it beside the approved emails and env
   * names, which an import takes up to {@link LIMITS.importSchemaBytes}; 8 MiB of members were
   * parsed by every listing of deployments, 0.7 s each.
   */
  declarationChars: 2 * 1024 * 1024,
  /** Largest JSON argument of one syscall from an isolate. */
  syscallBytes: 8 * 1024 * 1024,
  /**
   * Objects and arrays (nested ones included) one syscall's JSON may open, counted as its `{` and
   * `[` characters (those inside strings too). Ours: parsing is the host's main thread's work.
   */
  syscallContainers: 262_144,
  /**
   * Object members (`"key": value` pairs, nested ones included) of one piece of JSON a tenant or
   * its users send the host to parse: a platform call, a query or mutation's arguments, a sync
   * message, an endpoint's answer. Ours: the host's main thread parses them, at about 0.45 ms per
   * thousand distinct keys (65,536 take about 30 ms; 600,000 took 0.6 s).
   */
  jsonMembers: 65_536,
  /**
   * Headers of one custom endpoint's answer. Ours: each is checked, set and written by the host's
   * main thread (100,000 held it for most of a second), and proxies in front take far fewer
   * (nginx's default buffer for them all is 4-8 KiB).
   */
  endpointResponseHeaders: 100,
  /**
   * Characters of one custom endpoint's answer's headers, names and values together. Ours: the
   * host's main thread reads each `Set-Cookie` attribute by attribute (8 MB of `;` held it for most
   * of a second), and a proxy or client refuses far less (nginx 4-8 KiB by default, Node's client
   * 16 KiB). 64 KiB before: an answer's head past what the proxy takes makes nginx mark the host
   * failed, for every tenant (docs/operators.md sizes its buffer for this limit).
   */
  endpointResponseHeaderChars: 16 * 1024,
  /**
   * Characters of platform calls one isolate may have in flight at once on its own thread (each is
   * copied into the host's memory as it is made). Ours.
   */
  syscallCharsInFlight: 16 * 1024 * 1024,
  /**
   * Requests one caller (an identity, else an IP address) may make to one deployment: a bucket of
   * `requestQuotaBurst` refilled at `requestQuotaPerSecond`. Every query, mutation and endpoint call
   * costs one, and so does every result pushed to every subscriber of a live query, shared or not
   * (docs/limits.md: each subscriber of a shared query still uses the request quota). Ours.
   */
  requestQuotaPerSecond: 100,
  requestQuotaBurst: 1000,
  /**
   * An answer costs its caller one more request per this many bytes (a call's over HTTP, an
   * endpoint's) or characters (a mutation's over the sync socket), taken after it is made, down
   * to minus the burst: the host's main thread encodes and writes every byte (an endpoint's 8 Mi
   * characters of "€" held it 66 ms a request). Ours.
   */
  answerBytesPerRequest: 64 * 1024,
  /** `ctx.log` lines kept per handler execution; later ones are dropped after one notice. Ours. */
  logLinesPerHandler: 100,
  /**
   * Characters of `ctx.log` lines (messages and fields, as kept) per handler execution; later
   * lines are dropped after one notice. Ours: the host's main thread redacts, encodes and writes
   * each one (100 lines of the largest, 2 MB, held it 9-21 ms a call, more with log followers).
   */
  logCharsPerHandler: 256 * 1024,
  /**
   * Bytes of log lines the host holds while its stdout is slow to take them; later lines are
   * dropped. Ours: one tenant's lines grew the heap to 2.1 GB in 26 s behind a slow reader.
   */
  logOutputBufferBytes: 64 * 1024 * 1024,
  /** Characters kept of one `ctx.log` message (longer ones are cut). Ours. */
  logMessageChars: 4096,
  /** Characters of one log line's JSON fields kept (longer ones become `{ truncated }`). Ours. */
  logFieldsChars: 16 * 1024,
  /**
   * Characters kept of a failed handler's stack frames, for the developer's `platform dev` terminal
   * and `platform logs` (never sent to callers). Ours.
   */
  errorStackChars: 4096,
  /**
   * Characters kept of a failed handler's error message, for its caller and the logs (longer ones
   * are cut). Ours: a message is read by people, and every kept or redacted character costs the
   * host's main thread.
   */
  errorMessageChars: 4096,
  /** Server-only env values of one deployment, and characters of one (name or value). Ours. */
  envValues: 100,
  envValueChars: 8192,
  /** Characters of log text kept per deployment (messages, fields, failures), oldest lines first out. Ours. */
  logCharsKept: 4 * 1024 * 1024,
  /** Log lines kept per deployment for `platform logs` and the log stream. Ours. */
  logLinesKept: 1000,
  /** How long an emailed sign-in code is valid, in ms. */
  emailCodeLifetimeMs: 10 * 60_000,
  /** Wrong guesses that kill a sign-in code (counted atomically, concurrent guesses included). */
  emailCodeAttempts: 5,
  /** Codes one email address may be sent per {@link LIMITS.emailCodeWindowSeconds} (per deployment). Ours. */
  emailCodeRequestsPerAddress: 5,
  /**
   * Sign-in mails one email address may be sent per {@link LIMITS.emailCodeWindowSeconds} by the
   * whole installation, every deployment together (beyond, a request gets the newest live code's
   * handle, as past the per-deployment limit). Ours: else one client could have each deployment of
   * a host mail a victim. Shared by a user of several apps on one host.
   */
  emailCodeMailsPerAddress: 10,
  /** Codes one client address (IP) may request per {@link LIMITS.emailCodeWindowSeconds} from one deployment, all emails together. Ours. */
  emailCodeRequestsPerClient: 30,
  /** Codes one client address (IP) may request per {@link LIMITS.emailCodeWindowSeconds} from every deployment of a host together. Ours. */
  emailCodeRequestsPerClientHostWide: 100,
  /** The window of the two code request limits above, in seconds. */
  emailCodeWindowSeconds: 15 * 60,
  /**
   * Guests one client address may create per deployment per {@link LIMITS.guestSignInWindowSeconds}
   * (not in `platform dev`). Ours: each guest has a request quota of its own, so unbounded guests
   * would multiply a client's quota (Firebase allows 100 anonymous sign-ins an hour per address).
   */
  guestSignInsPerClient: 100,
  guestSignInWindowSeconds: 60 * 60,
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
  /**
   * Account sessions one developer may mint per minute for their deployments' users
   * (`POST /v1/deploys/<id>/sessions`; the operator's are not limited). Ours: each is a stored
   * record, kept until no token of it can be used.
   */
  sessionsMintedPerMinute: 60,
  /**
   * Deploys (`POST /v1/deploys`, `PUT /v1/deploys/<id>`) one developer may start per minute on a
   * host, failed ones too (the operator's are not limited). Ours: each compiles and checks its
   * bundle and may migrate, and a 16 MiB bundle costs the host's main thread stretches of
   * 30-400 ms and the process up to 2 GB while it loads.
   */
  deploysPerMinute: 30,
  /**
   * Sync WebSockets one client address may hold open on a host, all deployments together. Ours:
   * each holds the host's memory; many users behind one address (an office's NAT) stay well inside.
   */
  syncSocketsPerClient: 1000,
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
   * Calls of one deployment waiting for an execution slot; beyond them a call is refused at once
   * with `503 unavailable` and `Retry-After`. Waiting calls hold no host-wide slot. Ours.
   */
  deploymentQueuedCalls: 128,
  /**
   * Calls of one deployment executing at once (interleaved at their awaits in its one isolate),
   * each holding one of the host's execution slots. Ours.
   */
  deploymentCallsInFlight: 64,
  /**
   * Live-query re-runs of one deployment under way at once; the others wait their turn in the
   * host's memory, first come first served, so a commit touching thousands of subscriptions
   * neither fills the deployment's call queue (its other calls still get in) nor runs ahead of
   * other deployments. Ours.
   */
  liveRerunsInFlight: 16,
  /**
   * Bytes the host's code-cache files may take on its disk, all deployments together; beyond them
   * the least recently used are deleted (a tenant deploying thousands of versions would otherwise
   * fill the disk every tenant's data is on). Ours.
   */
  codeCacheDiskBytes: 1024 * 1024 * 1024,
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
  /** Seconds a call refused because its deployment is busy is told to wait (`Retry-After`). Ours. */
  busyRetryAfterSeconds: 1,
  /**
   * A deployment whose isolate is stopped for its CPU or memory limit again within
   * `breachPauseMaxMs` of the last stop has its calls refused (`503 unavailable`, `Retry-After`)
   * for a pause of `breachPauseMs`, doubling with each further stop up to `breachPauseMaxMs`. Ours.
   */
  breachPauseMs: 1000,
  breachPauseMaxMs: 60_000,
  /**
   * Calls that deployments stopped for their CPU or memory limit within the last
   * `breachPauseMaxMs` may run at once, all such deployments together (each call also needs one of
   * the host's execution slots); their other calls wait in their own queues. Ours.
   */
  breachedCallsRunning: 2,
  /**
   * A deployment that answered this many calls since its previous stop for a limit is not held to
   * `breachedCallsRunning` by its next stop (an established app unlucky once). Ours.
   */
  breachForgivenCalls: 100,
  /**
   * A call on its isolate's own thread that leaves the heap above this share of the memory limit
   * (garbage included) counts as a stop for `breachedCallsRunning` (not for the pause). Ours.
   */
  breachHeapShare: 0.5,
  /**
   * Milliseconds one turn of the host's event loop may spend entering isolates inline, all
   * deployments together, before the rest wait for the next turn (one entry always goes in).
   * Ours: a light tenant's request waits for about this plus one entry, however many tenants are
   * busy.
   */
  inlineTurnMs: 4,
  /**
   * Nice values the host raises its main thread above its other threads, where the process may
   * (`CAP_SYS_NICE` or `RLIMIT_NICE`; host/isolates/thread-priority.ts). Ours: beside 20 tenants
   * spinning on their threads, a good tenant's p99 was about 5 ms raised by 5, 11-20 ms not raised
   * (alone: 1.5-3 ms); processes the host starts inherit it, so not more.
   */
  mainThreadNiceRaise: 5,
  /**
   * Milliseconds of CPU an isolate may run on its own thread on one of the host's run tokens while
   * other deployments wait for one; past it, it runs on without (host/isolates/thread-tokens.ts).
   * Ours: longer than a heavy handler's run, short beside a CPU limit.
   */
  isolateThreadTurnMs: 50,
  /**
   * Milliseconds of CPU an isolate may run on the host's spare run token, which only isolates
   * whose turns lately averaged under half of this may take while the others are all held; past
   * it, it runs on without (host/isolates/thread-tokens.ts). Ours: a light handler's run, so a
   * light tenant on its thread does not wait for busy tenants' turns.
   */
  isolateThreadLightTurnMs: 4,
  /** Largest capsule bundle accepted by a deploy. */
  bundleBytes: 16 * 1024 * 1024,
  /**
   * A deploy's web client (the files of `client/` and its build), served at the deployment's
   * origin: files, bytes of one file, and bytes of all of them. Ours: a built web app is a few
   * MiB; the bounds keep one deploy body (base64) and what the database keeps per deployment small.
   */
  clientFiles: 1000,
  clientFileBytes: 8 * 1024 * 1024,
  clientBytes: 32 * 1024 * 1024,
  /**
   * `platform import`: the archive as uploaded, and the rows (JSON, uncompressed) it may carry.
   * Ours: an import is written as ONE atomic batch (all-or-nothing across a crash), which the host
   * holds in memory with the index entries it rebuilds; larger apps need a streaming scheme.
   */
  importArchiveBytes: 512 * 1024 * 1024,
  importRowBytes: 128 * 1024 * 1024,
  /**
   * Rows, index entries and counts one import writes together (each row counts once, and once
   * more for each index of its table, refused before any is built; each distinct value of a
   * counted index prefix once more, refused as they come): the batch is held in memory whole,
   * about a kilobyte of the host's heap each, on its main thread (3.2 million took 115 s and 3.8
   * GiB; 5 million ended the host). Ours, until imports stream.
   */
  importOperations: 1_000_000,
  /**
   * How far past the importing host's clock an archive's `createdAt` values and clock may be (an
   * exporting host's clock ahead of this one's). Ours: a later one would move the deployment's
   * clock past where its steps of 1/1024 ms still add up (about the year 2109), and every later
   * insert would share one `createdAt`.
   */
  importClockAheadMs: 24 * 60 * 60 * 1000,
  /** Files in one import archive (each stored object is one). Ours. */
  importArchiveEntries: 200_000,
  /**
   * Uncompressed bytes of an import archive's `schema.json` and `deployment.json`, each checked
   * (with {@link LIMITS.jsonMembers} objects, arrays and members, `schema.json` with
   * {@link LIMITS.importSchemaMembers}) before the host's main thread parses it: 70 KB of zip
   * inflating to 64 MiB of `{},` held it for two minutes. Ours: a stored schema is its declared
   * tables with one short record per field and index, about 2.6 KiB and 150 members for a table
   * of 30 fields and 10 indexes, so 4 MiB holds some 1,500 such tables (deploys bound a schema only
   * by the declaration's {@link LIMITS.resultBytes}); `deployment.json` repeats the declaration
   * beside the approved emails (one settings request, {@link LIMITS.requestBodyBytes}) and the
   * names of at most {@link LIMITS.envValues} env values (0.8 MiB).
   */
  importSchemaBytes: 4 * 1024 * 1024,
  /**
   * Objects, arrays and members of an import's `schema.json`: room for the 4 MiB above filled with
   * real tables (a parse of this many costs the main thread a few hundred milliseconds, once per
   * import, and a developer imports one archive at a time). Ours.
   */
  importSchemaMembers: 1024 * 1024,
  importDeploymentBytes: 4 * 1024 * 1024,
  /**
   * How long a host remembers a mutation's idempotency key (the client's `Idempotency-Key`), at
   * least: a retry with the same key within this time gets the first call's result without running
   * the handler again. A record is deleted when it is two to four times this old, at the
   * deployment's next mutation with a key. Ours.
   */
  idempotencyKeyMs: 10 * 60_000,
  /** Longest idempotency key accepted (printable ASCII, no spaces). Ours. */
  idempotencyKeyChars: 128,
  /**
   * How long `platform/client` keeps retrying a call that got no answer (a host that restarted or
   * died, a connection reset, a balancer's `502`/`503`/`504`) before it fails it. Well within
   * {@link LIMITS.idempotencyKeyMs}, so a retried mutation is always recognised. Ours.
   */
  callRetryMs: 60_000,
  /**
   * How long a host shutting down (`SIGTERM`) waits for calls in flight beyond the wall limit of a
   * handler (`handlerWallMs`) before it closes the remaining connections. Ours.
   */
  drainGraceMs: 5000,
  /**
   * How often a followed log stream (`GET /v1/deploys/<id>/logs?follow=1`) checks that the token
   * or dashboard session that opened it still speaks for someone: a replaced developer token or a
   * signed-out session ends its streams within this time. Ours.
   */
  logFollowRecheckMs: 5000,
  /**
   * Bytes of new lines a followed log stream may have unread before it is ended (its client
   * reads too slowly), and log streams one developer (or the operator) may have open at once. Ours.
   */
  logFollowUnreadBytes: 1024 * 1024,
  /** How often a followed log stream's unread lines are looked at (see logFollowUnreadBytes). Ours. */
  logFollowLookMs: 1000,
  logStreamsPerCaller: 8,
  /**
   * How long an export waits for a read snapshot of the host's own share, holding its
   * deployment's lifecycle lock (`503 unavailable` after), and how long its client may go without
   * reading before the export is stopped: each export holds a snapshot (on PostgreSQL a connection
   * in an open transaction) until it is read. Ours.
   */
  exportSnapshotWaitMs: 5000,
  exportStalledMs: 120_000,
  /** What an export's client must read in {@link LIMITS.exportStalledMs} to keep it going. Ours. */
  exportProgressBytes: 64 * 1024,
  /**
   * How long one export may take, read however steadily: its snapshot keeps PostgreSQL from
   * cleaning up any tenant's dead rows (they share one table) and classic-level from compacting
   * away old files, and a client reading 64 KiB every two minutes kept one open for hours. Ours.
   */
  exportMaxMs: 30 * 60_000,
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

/** The names of the per-handler read budgets. */
export type BudgetName = "rowsReturned" | "rowsRead" | "bytesRead" | "rangesRead" | "rangeBytesRead";
