import type pg from "pg";

/** Keeps track of work left running after its caller moved on (the store waits for it on close). */
export type Track = (work: Promise<void>) => void;

/** How long a parked connection waits for its next snapshot before its transaction is ended (ms). */
const PARK_MS = 20;

interface Parked {
  client: pg.PoolClient;
  since: number;
  /** The connection failed while parked: it is destroyed, not used. */
  broken: boolean;
  onError: () => void;
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
    for (let parked = this.parked.pop(); parked; parked = this.parked.pop()) {
      parked.client.removeListener("error", parked.onError);
      if (!parked.broken) return { client: parked.client, end: "ROLLBACK" };
      parked.client.release(true);
    }
    return { client: await this.pool.connect(), end: "" };
  }

  /** Parks `client`, whose read-only transaction is over (ended at once if the pool has waiters). */
  park(client: pg.PoolClient): void {
    // Out of the pool, nobody else listens: a connection lost meanwhile must not crash the process.
    const parked: Parked = { client, since: performance.now(), broken: false, onError: () => {} };
    parked.onError = () => {
      parked.broken = true;
    };
    client.on("error", parked.onError);
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

  private end(parked: Parked): void {
    const { client, onError } = parked;
    const release = (broken: boolean) => {
      client.removeListener("error", onError);
      client.release(broken);
    };
    this.track(
      client.query("ROLLBACK").then(
        () => release(parked.broken),
        () => release(true),
      ),
    );
  }
}
