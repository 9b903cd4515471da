import pg from "pg";
import { PlatformError } from "../../../sdk/values/index.js";

/** How often the watch looks for round trips left unanswered (ms). */
const LOOK_EVERY_MS = 1000;

/**
 * A connection of a {@link SilenceWatch}: it notes when each of its round trips was sent, and
 * answers a round trip the watch ended with `unavailable` instead of the driver's own error.
 */
interface Watched {
  /** When each round trip not answered yet was sent (ms), oldest first: answers come in order. */
  readonly sent: number[];
  /** Set when the watch ended the connection for its server's silence. */
  silenced: boolean;
}

/**
 * Ends the connections of a PostgreSQL server that stopped answering without closing them (a
 * frozen server, a network that drops everything). The driver would wait on such a connection for
 * as long as the server stays so, and with it every caller: a sign-in, an upload, a deploy. When a
 * round trip has waited {@link silenceMs}, a new connection asks the server `SELECT 1`; a server
 * that does not answer that either within the same time is silent, and every connection with a
 * round trip waiting that long is ended. Their callers are answered `503 unavailable` at once, the
 * pools open new connections, and those fail (`connectionTimeoutMillis`) until the server answers
 * again. A round trip that waits for a lock another host holds is left alone while the server
 * answers the probe: waiting for a lock is not silence.
 */
export class SilenceWatch {
  private readonly connections = new Set<Watched>();
  private readonly timer: NodeJS.Timeout;
  private probing = false;
  /** Connections ended for silence so far (the host's metrics may read it). */
  ended = 0;

  constructor(
    private readonly url: string,
    readonly silenceMs: number,
  ) {
    this.timer = setInterval(() => void this.look(), Math.min(LOOK_EVERY_MS, silenceMs)).unref();
  }

  /** The `Client` class for the pools (pg.Pool's `Client` option): its connections are watched. */
  clientClass(): typeof pg.Client {
    const watch = this;
    return class WatchedClient extends pg.Client implements Watched {
      readonly sent: number[] = [];
      silenced = false;

      /** The pool's settings, and a connection that is not made within the silence fails. */
      constructor(config: pg.ClientConfig) {
        super(Object.assign({}, config, { connectionTimeoutMillis: watch.silenceMs }));
        watch.connections.add(this);
        this.once("end", () => watch.connections.delete(this));
      }

      // Those listening for the connection's failure (pg.Pool's query) hear it as its callers do.
      override emit(event: string | symbol, ...args: unknown[]): boolean {
        if (event === "error" && this.silenced) args[0] = silentError(watch.silenceMs, args[0]);
        return super.emit(event, ...args);
      }

      // biome-ignore lint/suspicious/noExplicitAny: as query's, below.
      override connect(...args: any[]): any {
        const callback = args[0];
        if (typeof callback === "function")
          return super.connect((error: Error | undefined) =>
            callback(error ? silentError(watch.silenceMs, error) : error),
          );
        return super.connect().catch((error: unknown) => {
          throw silentError(watch.silenceMs, error);
        });
      }

      // biome-ignore lint/suspicious/noExplicitAny: pg.Client's query has many overloads; all pass through.
      override query(...args: any[]): any {
        this.sent.push(performance.now());
        const answered = () => {
          this.sent.shift();
        };
        const last = args.at(-1);
        if (typeof last === "function") {
          args[args.length - 1] = (error: unknown, ...rest: unknown[]) => {
            answered();
            last(this.silenced && error ? silentError(watch.silenceMs) : error, ...rest);
          };
          // biome-ignore lint/suspicious/noExplicitAny: as above.
          return (super.query as any)(...args);
        }
        // biome-ignore lint/suspicious/noExplicitAny: as above.
        const result = (super.query as any)(...args);
        if (!(result instanceof Promise)) {
          answered();
          return result;
        }
        return result.then(
          (value) => {
            answered();
            return value;
          },
          (error: unknown) => {
            answered();
            throw this.silenced ? silentError(watch.silenceMs) : error;
          },
        );
      }
    } as unknown as typeof pg.Client;
  }

  /** Stops watching (the pools are ending). */
  close(): void {
    clearInterval(this.timer);
  }

  /** Ends the connections of a silent server (see the class comment). */
  private async look(): Promise<void> {
    if (this.probing) return;
    const now = performance.now();
    const waiting = [...this.connections].filter(
      (connection) => !connection.silenced && (connection.sent[0] ?? now) <= now - this.silenceMs,
    );
    if (waiting.length === 0) return;
    this.probing = true;
    try {
      if (await this.answers()) return;
      for (const connection of waiting) {
        connection.silenced = true;
        this.ended++;
        (
          connection as unknown as { connection: { stream: { destroy(): void } } }
        ).connection.stream.destroy();
      }
    } finally {
      this.probing = false;
    }
  }

  /** Whether the server answers `SELECT 1` (or refuses it) on a new connection within {@link silenceMs}. */
  private async answers(): Promise<boolean> {
    const probe = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: this.silenceMs });
    probe.on("error", () => {});
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.silenceMs);
    });
    // A refusal the server sends (too many connections, starting up) is an answer; none at all is not.
    const answered = (async () => {
      await probe.connect();
      await probe.query("SELECT 1");
      return true;
    })().catch((error: unknown) => error instanceof pg.DatabaseError);
    try {
      return await Promise.race([answered, silent]);
    } finally {
      clearTimeout(timer);
      // A silent server never answers the goodbye: the socket goes without it.
      (probe as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }
  }
}

/** What a caller whose round trip the watch ended, or whose connection could not be made, gets. */
export function silentError(silenceMs: number, cause?: unknown): PlatformError {
  return new PlatformError(
    "unavailable",
    `The database did not answer within ${Math.round(silenceMs / 100) / 10} s (busy, or not reachable). Retry later.`,
    { retryAfterSeconds: 1, cause },
  );
}
