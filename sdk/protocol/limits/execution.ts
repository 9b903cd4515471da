/**
 * Handler execution: what one handler's run may use (heap, CPU and wall time, platform calls, its
 * result), and how the host shares its execution slots, threads and code cache among deployments.
 * Part of `LIMITS` (../limits.ts), which composes every area and is the one object to import.
 */
export const EXECUTION_LIMITS = {
  /**
   * Platform calls (database calls and log lines, answered or refused) one handler execution may
   * make; the next one fails the execution with `limit_exceeded`. Ours: a call that fails its
   * checks (an id no row can have) reads nothing and was free, and 20,000 of them held the main
   * thread 0.93 s a request. Room for every row read and written within their own limits.
   */
  platformCallsPerHandler: 16_384,
  /** Heap of one deployment's isolate, in MiB (docs/limits.md). */
  isolateMemoryMb: 128,
  /** CPU time one handler may use, in ms (watchdog on the isolate's CPU clock). */
  handlerCpuMs: 1000,
  /**
   * CPU an isolate may use beyond what its calls in flight may (a handler's limit each), in ms:
   * the microtasks a call leaves behind after its answer. Code a handler left running (a promise
   * chain it did not await) used the isolate's thread with no limit and kept it from ever being
   * evicted; now the isolate is stopped, as at the CPU limit, once it used more
   * (host/isolates/cpu-budget.ts). Ours.
   */
  strayCpuMs: 50,
  /** Wall time one handler may take, in ms, including database waits. */
  handlerWallMs: 15_000,
  /** Largest JSON value a handler may return, in characters (an endpoint's answer: head and body). */
  resultBytes: 8 * 1024 * 1024,
  /** Largest JSON argument of one syscall from an isolate. */
  syscallBytes: 8 * 1024 * 1024,
  /**
   * Objects and arrays (nested ones included) one syscall's JSON may open, counted as its `{` and
   * `[` characters (those inside strings too). Ours: parsing is the host's main thread's work.
   */
  syscallContainers: 262_144,
  /**
   * Characters of platform calls one isolate may have in flight at once on its own thread (each is
   * copied into the host's memory as it is made). Ours.
   */
  syscallCharsInFlight: 16 * 1024 * 1024,
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
   * Calls executing at once of all the deployments of one developer account together, on one host
   * (an unclaimed deployment counts alone); past it their calls wait in their deployments' queues.
   * Ours: half of a host's 256 slots, room for a developer's several busy apps.
   */
  ownerCallsInFlight: 128,
  /**
   * Bytes the host's code-cache files may take on its disk, all deployments together; beyond them
   * the least recently used are deleted (a tenant deploying thousands of versions would otherwise
   * fill the disk every tenant's data is on). Ours.
   */
  codeCacheDiskBytes: 1024 * 1024 * 1024,
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
  /**
   * How long a deployment's work may wait for a run token on its isolate's own thread before every
   * other token goes to the longest waiting, ahead of deployments that used less CPU lately
   * (host/isolates/thread-tokens.ts). Ours: a few turns, so many light tenants cannot keep a
   * heavier one waiting.
   */
  isolateThreadWaitMs: 200,
} as const;
