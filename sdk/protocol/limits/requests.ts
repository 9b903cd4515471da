/**
 * Requests and answers, over HTTP and the sync socket: bodies arriving and answers unread, per client
 * address and host-wide; JSON the host parses; endpoint answers' heads; the request quota; sync sockets;
 * idempotency keys and the client's retries.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const REQUEST_LIMITS = {
  /** Largest request body for queries, mutations and endpoints. */
  requestBodyBytes: 1024 * 1024,
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
  /**
   * Sync WebSockets one client address may hold open on a host, all deployments together. Ours:
   * each holds the host's memory; many users behind one address (an office's NAT) stay well inside.
   */
  syncSocketsPerClient: 1000,
  /**
   * Characters of mutation answers a host's sync sockets hold back, until the pushes their writes
   * caused have gone (read-your-writes), from one client address and from all together (one
   * deployment's clients at most half of it, so another tenant's keep the rest). Beyond
   * them an answer goes at once, ahead of those pushes. Ours: a client subscribed to a slow query
   * that sent mutations answering 8 Mi characters each had the host hold 532 MiB for one socket.
   */
  syncAnswersHeldCharsPerClient: 16 * 1024 * 1024,
  syncAnswersHeldChars: 128 * 1024 * 1024,
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
   * Control-plane requests (`/v1`) one developer has running at once on a host; more wait their
   * turn. Ours: their answers' bytes are charged once made, and a thousand data-browser pages
   * asked for at once were all admitted before the first was charged.
   */
  controlPlaneRequestsAtOnce: 4,
} as const;
