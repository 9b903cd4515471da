import type pg from "pg";

/** Keeps track of work left running after its caller moved on (the store waits for it on close). */
export type Track = (work: Promise<void>) => void;

/** How long a parked connection waits for its next snapshot before its transaction is ended (ms). */
const PARK_MS = 20;

interface Parked {
  client: pg.PoolClient;
  since: number;
}

/** Connections that failed (the server ended them, the network dropped): destroyed, never used again. */
const lost = new WeakSet<pg.ClientBase>();

/**
 * Listens for the failure of every connection `pool` makes, for its whole life. pg emits a
 * connection's failure as an `error` event on its client, which the pool listens for only while
 * the client is idle in it: a client out of the pool (a snapshot's, a lock's) that the server
 * ended (an administrator, a restart, `idle_in_transaction_session_timeout`) would otherwise
 * crash the process with an unhandled error event, taking every tenant down with it.
 */
export function watchForLoss(pool: pg.Pool): void {
  pool.on("connect", (client) => {
    client.on("error", () => lost.add(client));
  });
}

/** Whether `client`'s connection failed (see {@link watchForLoss}). */
export function isLost(client: pg.ClientBase): boolean {
  return lost.has(client);
}

/** A connection to run a snapshot on, and what must end on it first ("" or "ROLLBACK"). */
export interface TakenConnection {
  client: pg.PoolClient;
  end: string;
}

/**
 * The snapshot pool's connections whose read-only transaction is over but not yet ended on the
 * server: ending it is a round trip of its own, so the next snapshot on the connection ends it in
 * the round trip that begins its own (a handler that reads once then costs one round trip). A
 * parked connection not taken within {@link PARK_MS} is ended and released, so an idle transaction
 * never holds back the server's cleanup for long; none is parked while someone waits for the pool.
 */
export class ConnectionParking {
  private readonly parked: Parked[] = [];
  /** Takers waiting for a connection while every one of the pool is out (see {@link take}). */
  private readonly waiters: Array<{
    resolve: (taken: TakenConnection) => void;
    reject: (error: unknown) => void;
  }> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly track: Track,
  ) {}

  /** Connections parked now (the pool counts them as in use; they are as good as idle). */
  get size(): number {
    return this.parked.length;
  }

  /**
   * The connection parked longest, or a connection of the pool; when every one is out, the next
   * one parked (handed over as it is, its transaction ended with the taker's first round trip).
   * Longest first keeps every parked connection in use under load: taking the most recent one left
   * the rest parked past {@link PARK_MS}, each then ended by a round trip of its own (half a
   * ROLLBACK per request of 32 concurrent get-by-id requests; a few per thousand this way).
   */
  async take(): Promise<TakenConnection> {
    for (let parked = this.parked.shift(); parked; parked = this.parked.shift()) {
      if (!isLost(parked.client)) return { client: parked.client, end: "ROLLBACK" };
      this.destroy(parked.client);
    }
    const pool = this.pool;
    if (pool.totalCount < (pool.options.max ?? 10) || pool.idleCount > 0)
      return { client: await pool.connect(), end: "" };
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Gives back `client`, with no transaction open: to a waiting taker, else to the pool. */
  giveBack(client: pg.PoolClient): void {
    if (isLost(client)) {
      this.destroy(client);
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve({ client, end: "" });
    else client.release();
  }

  /** Destroys `client` (it failed); a waiting taker gets a new connection in its place. */
  destroy(client: pg.PoolClient): void {
    client.release(true);
    const waiter = this.waiters.shift();
    if (waiter)
      this.pool.connect().then(
        (fresh) => waiter.resolve({ client: fresh, end: "" }),
        (error: unknown) => waiter.reject(error),
      );
  }

  /** Parks `client`, whose read-only transaction is over (ended at once if the pool has waiters). */
  park(client: pg.PoolClient): void {
    if (isLost(client)) {
      this.destroy(client);
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.resolve({ client, end: "ROLLBACK" });
      return;
    }
    const parked: Parked = { client, since: performance.now() };
    if (this.pool.waitingCount > 0) {
      this.end(parked);
      return;
    }
    this.parked.push(parked);
    this.timer ??= setTimeout(() => this.sweep(), PARK_MS).unref();
  }

  /** Ends every parked connection (the store is closing). */
  endAll(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const parked of this.parked.splice(0)) this.end(parked);
  }

  private sweep(): void {
    this.timer = undefined;
    const now = performance.now();
    while (this.parked.length > 0 && now - (this.parked[0]?.since ?? now) >= PARK_MS)
      this.end(this.parked.shift() as Parked);
    if (this.parked.length > 0) this.timer = setTimeout(() => this.sweep(), PARK_MS).unref();
  }

  private end({ client }: Parked): void {
    this.track(
      client.query("ROLLBACK").then(
        () => this.giveBack(client),
        () => this.destroy(client),
      ),
    );
  }
}
