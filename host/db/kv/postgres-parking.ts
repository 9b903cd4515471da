import type pg from "pg";

/** Keeps track of work left running after its caller moved on (the store waits for it on close). */
export type Track = (work: Promise<void>) => void;

/** How long a parked connection waits for its next snapshot before its transaction is ended (ms). */
const PARK_MS = 20;

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
  private readonly parked: Array<{ client: pg.PoolClient; since: number }> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly track: Track,
  ) {}

  /** Connections parked now (the pool counts them as in use; they are as good as idle). */
  get size(): number {
    return this.parked.length;
  }

  /** The most recently parked connection, or a connection of the pool. */
  async take(): Promise<TakenConnection> {
    const parked = this.parked.pop();
    if (parked) return { client: parked.client, end: "ROLLBACK" };
    return { client: await this.pool.connect(), end: "" };
  }

  /** Parks `client`, whose read-only transaction is over (ended at once if the pool has waiters). */
  park(client: pg.PoolClient): void {
    if (this.pool.waitingCount > 0) {
      this.end(client);
      return;
    }
    this.parked.push({ client, since: performance.now() });
    this.timer ??= setTimeout(() => this.sweep(), PARK_MS).unref();
  }

  /** Ends every parked connection (the store is closing). */
  endAll(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const { client } of this.parked.splice(0)) this.end(client);
  }

  private sweep(): void {
    this.timer = undefined;
    const now = performance.now();
    while (this.parked.length > 0 && now - (this.parked[0]?.since ?? now) >= PARK_MS)
      this.end((this.parked.shift() as { client: pg.PoolClient }).client);
    if (this.parked.length > 0) this.timer = setTimeout(() => this.sweep(), PARK_MS).unref();
  }

  private end(client: pg.PoolClient): void {
    this.track(
      client.query("ROLLBACK").then(
        () => client.release(),
        () => client.release(true),
      ),
    );
  }
}
