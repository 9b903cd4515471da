import pg from "pg";
import { PlatformError } from "../../../sdk/values/index.js";
import { NOTHING_SENT } from "./kv.js";
import { askServerKeepalive } from "./postgres-keepalive.js";

/** How often the watch looks for round trips left unanswered (ms). */
const LOOK_EVERY_MS = 1000;

/** Marks a statement that only reads: the watch may end its connection (see {@link SilenceWatch}). */
const READ_ONLY = Symbol("read-only");

/** `text` (and its `values`) as a statement that only reads (a lock's taking counts as one). */
export function readOnly(text: string, values?: unknown[]): pg.QueryConfig {
  return Object.assign(values === undefined ? { text } : { text, values }, { [READ_ONLY]: true });
}

/** One round trip a watched connection waits on. */
interface RoundTrip {
  /** When it was sent (ms). */
  at: number;
  /** True when it only reads: ending its connection cannot leave a write unknown. */
  readOnly: boolean;
}

/** A caller waiting for a pool's connection: failed at once when the server is found silent. */
export interface PoolWaiter {
  fail(error: Error): void;
}

/** A connection of a {@link SilenceWatch}. */
interface Watched {
  /** Its round trips not answered yet, oldest first: answers come in order. */
  readonly waiting: RoundTrip[];
  /** Set when the watch ended the connection for its server's silence. */
  silenced: boolean;
}

/**
 * Ends the reads of a PostgreSQL server that stopped answering without closing its connections (a
 * frozen server, a network that drops everything). The driver would wait on such a connection for
 * as long as the server stays so, and with it every caller: a signed-in caller's session, a
 * deploy's lock, the dashboard. When a round trip has waited {@link silenceMs}, a new connection
 * asks the server `SELECT 1`. If that times out too, the server is silent:
 *
 * - each connection still waiting on the same round trip is ended, when what it waits on only
 *   reads (or takes a lock): its caller is answered `503 unavailable`, and nothing is lost;
 * - a connection with a write in flight is left to wait: only the server can say whether the write
 *   landed (mutations are answered meanwhile by their own bound, saying so: see MutationWaits);
 * - until the server answers a probe again, no statement is sent and no connection made: callers,
 *   those already waiting for a pool's connection included, are answered `unavailable` at once,
 *   having sent nothing.
 *
 * A connection not made within {@link silenceMs} fails, and has the server asked at once.
 *
 * A round trip that waits for a lock another host holds is left alone while the server answers
 * the probe. Only a timeout is taken as silence, not a refusal or a network error, and not while
 * another connection gets an answer meanwhile.
 */
export class SilenceWatch {
  private readonly connections = new Set<Watched>();
  private readonly poolWaiters = new Set<PoolWaiter>();
  private readonly timer: NodeJS.Timeout;
  private probing = false;
  /** When the server last answered a probe (ms): it is not asked again for {@link silenceMs}. */
  private answeredAt = Number.NEGATIVE_INFINITY;
  /** True from a probe that timed out until the server answers one (or any round trip). */
  private silent = false;
  /** When a watched round trip was last answered (ms): an answer during a probe is a sign of life. */
  private lastAnswer = Number.NEGATIVE_INFINITY;
  /** Set when a connection was not made within the silence: the next look asks the server. */
  private connectStalled = false;

  constructor(
    private readonly url: string,
    readonly silenceMs: number,
  ) {
    this.timer = setInterval(
      () => {
        this.look().catch(() => {});
      },
      Math.min(LOOK_EVERY_MS, silenceMs),
    ).unref();
  }

  /** The `Client` class for the pools (pg.Pool's `Client` option): its connections are watched. */
  clientClass(): typeof pg.Client {
    const watch = this;
    return class WatchedClient extends pg.Client implements Watched {
      readonly waiting: RoundTrip[] = [];
      silenced = false;
      private connectTimedOut = false;

      constructor(config: pg.ClientConfig) {
        super(config);
        this.once("end", () => watch.connections.delete(this));
      }

      // Those listening for the connection's failure (pg.Pool's query) hear it as its callers do.
      override emit(event: string | symbol, ...args: unknown[]): boolean {
        if (event === "error" && (this.silenced || this.connectTimedOut))
          args[0] = silentError(watch.silenceMs, args[0]);
        return super.emit(event, ...args);
      }

      /** Fails at once while the server is silent, and when not made within the silence. */
      // biome-ignore lint/suspicious/noExplicitAny: pg.Client's connect and query have many overloads; all pass through.
      override connect(...args: any[]): any {
        const callback = args[0] as ((error?: Error) => void) | undefined;
        if (watch.silent) return refusedUnsent(watch.silenceMs, callback);
        watch.connections.add(this);
        const timer = setTimeout(() => {
          this.connectTimedOut = true;
          watch.connectStalled = true;
          streamOf(this).destroy();
        }, watch.silenceMs);
        const settle = (error: unknown) => {
          clearTimeout(timer);
          if (!error) return error;
          watch.connections.delete(this);
          return this.connectTimedOut ? silentError(watch.silenceMs, error) : error;
        };
        // Made, then asked for the server's keepalive before anyone uses it (within the same time).
        const made = () =>
          askServerKeepalive(
            this,
            (sql) => super.query(sql),
            () => this.connectTimedOut,
          );
        if (typeof callback === "function")
          return super.connect((error: Error | undefined) => {
            if (error) callback(settle(error) as Error | undefined);
            else
              made().then(
                () => callback(settle(undefined) as undefined),
                (lost: unknown) => {
                  streamOf(this).destroy();
                  callback(settle(lost) as Error);
                },
              );
          });
        return super
          .connect()
          .then(made)
          .then(
            () => settle(undefined),
            (error: unknown) => {
              streamOf(this).destroy();
              throw settle(error);
            },
          );
      }

      // biome-ignore lint/suspicious/noExplicitAny: as connect's, above.
      override query(...args: any[]): any {
        const last = args.at(-1);
        const callback =
          typeof last === "function" ? (last as (error: unknown, ...rest: unknown[]) => void) : undefined;
        if (watch.silent) return refusedUnsent(watch.silenceMs, callback);
        const trip: RoundTrip = { at: performance.now(), readOnly: args[0]?.[READ_ONLY] === true };
        this.waiting.push(trip);
        const answered = (error: unknown) => {
          const at = this.waiting.indexOf(trip);
          if (at !== -1) this.waiting.splice(at, 1);
          // An answer is a sign of life; a silenced connection's error is not one.
          if (!error) {
            watch.silent = false;
            watch.lastAnswer = performance.now();
          }
          return this.silenced && error ? silentError(watch.silenceMs, error) : error;
        };
        if (callback) {
          args[args.length - 1] = (error: unknown, ...rest: unknown[]) => callback(answered(error), ...rest);
          // biome-ignore lint/suspicious/noExplicitAny: as above.
          return (super.query as any)(...args);
        }
        // biome-ignore lint/suspicious/noExplicitAny: as above.
        const result = (super.query as any)(...args);
        if (!(result instanceof Promise)) {
          answered(undefined);
          return result;
        }
        return result.then(
          (value) => {
            answered(undefined);
            return value;
          },
          (error: unknown) => {
            throw answered(error);
          },
        );
      }
    } as unknown as typeof pg.Client;
  }

  /** True while the server is taken as silent: nothing is sent, no connection is made. */
  get isSilent(): boolean {
    return this.silent;
  }

  /** Counts `waiter` in until the returned function is called: it is failed if the server is found silent meanwhile. */
  awaitConnection(waiter: PoolWaiter): () => void {
    this.poolWaiters.add(waiter);
    return () => this.poolWaiters.delete(waiter);
  }

  /** Stops watching (the pools are ending). */
  close(): void {
    clearInterval(this.timer);
  }

  /** Ends the reads of a silent server; while it is silent, asks until it answers (see the class comment). */
  private async look(): Promise<void> {
    if (this.probing) return;
    const now = performance.now();
    // The round trip each long-waiting connection waits on now: only the same one is ended.
    const stalled = new Map<Watched, RoundTrip>();
    for (const connection of this.connections) {
      const oldest = connection.waiting[0];
      if (!connection.silenced && oldest && oldest.at <= now - this.silenceMs)
        stalled.set(connection, oldest);
    }
    const stalledLong = stalled.size > 0 && now - this.answeredAt >= this.silenceMs;
    if (!this.silent && !this.connectStalled && !stalledLong) return;
    this.connectStalled = false;
    this.probing = true;
    const asked = performance.now();
    try {
      if ((await this.answers()) || this.lastAnswer >= asked) {
        this.answeredAt = performance.now();
        this.silent = false;
        return;
      }
      this.silent = true;
      for (const waiter of this.poolWaiters) waiter.fail(silentError(this.silenceMs, NOTHING_SENT));
      this.poolWaiters.clear();
      for (const [connection, trip] of stalled) {
        if (connection.waiting[0] !== trip || connection.waiting.some((each) => !each.readOnly)) continue;
        connection.silenced = true;
        streamOf(connection).destroy();
      }
    } finally {
      this.probing = false;
    }
  }

  /**
   * Whether the server answers `SELECT 1` on a new connection within {@link silenceMs}: only a
   * timeout is taken as silence (a refusal or a network error is an answer of sorts).
   */
  private async answers(): Promise<boolean> {
    const probe = new pg.Client({ connectionString: this.url });
    probe.on("error", () => {});
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.silenceMs);
    });
    const answered = (async () => {
      await probe.connect();
      await probe.query("SELECT 1");
      return true;
    })().catch(() => true);
    try {
      return await Promise.race([answered, silent]);
    } finally {
      clearTimeout(timer);
      // A silent server never answers the goodbye: the socket goes without it.
      streamOf(probe).destroy();
    }
  }
}

function streamOf(client: unknown): { destroy(): void } {
  return (client as { connection: { stream: { destroy(): void } } }).connection.stream;
}

/**
 * Answers a call refused before anything was sent (the server is silent): through `callback` when
 * given (undefined returned), else as the rejected promise returned.
 */
export function refusedUnsent(
  silenceMs: number,
  callback?: (error: PlatformError) => void,
): Promise<never> | undefined {
  const error = silentError(silenceMs, NOTHING_SENT);
  if (!callback) return Promise.reject(error);
  process.nextTick(callback, error);
  return undefined;
}

/** What a caller whose round trip the watch ended, or that could not be sent, gets. */
export function silentError(silenceMs: number, cause?: unknown): PlatformError {
  return new PlatformError(
    "unavailable",
    `The database did not answer within ${Math.round(silenceMs / 100) / 10} s (busy, or not reachable). Retry later.`,
    { retryAfterSeconds: 1, cause },
  );
}
