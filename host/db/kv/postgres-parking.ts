import type pg from "pg";
import type { SnapshotUse } from "./kv.js";
import { OwnerShares } from "./owner-shares.js";

/** Keeps track of work left running after its caller moved on (the store waits for it on close). */
export type Track = (work: Promise<void>) => void;

/** How long a parked connection waits for its next snapshot before its transaction is ended (ms). */
const PARK_MS = 20;

interface Parked {
  client: pg.PoolClient;
  since: number;
}

interface Waiter {
  owner: string;
  use: SnapshotUse;
  resolve: (taken: TakenConnection) => void;
  reject: (error: unknown) => void;
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
export function watchForLoss(pool: pg.Pool, onLoss?: () => void): void {
  pool.on("connect", (client) => {
    client.on("error", () => {
      lost.add(client);
      onLoss?.();
    });
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
 * never holds back the server's cleanup for long; none is parked while a taker that may have it waits.
 *
 * Connections are shared fairly between owners (developers: `HostDatabase.shareOf`): a handler
 * holds its snapshot's connection for as long as it runs, so one tenant with many slow handlers in
 * flight would hold every connection and every other tenant's reads would wait behind them. An
 * owner holding some takes another only while more than a reserve are free ({@link OwnerShares}),
 * and a freed connection goes to a waiting writer first (it holds a lock meanwhile), else to the
 * waiting owner that holds the fewest.
 */
export class ConnectionParking {
  private readonly parked: Parked[] = [];
  /** Takers waiting for a connection (see {@link take}), in order of arrival. */
  private readonly waiters: Waiter[] = [];
  private readonly shares: OwnerShares;
  private readonly max: number;
  /**
   * Connections out of the pool: lent, parked, being ended or being opened. The pool serves this
   * class alone, so counting them here (rather than reading the pool's figures, which lag a tick
   * behind `connect()`) means the pool is never asked for more than it has: a request it would
   * queue could be overtaken by every later one.
   */
  private out = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly track: Track,
  ) {
    this.max = pool.options.max ?? 10;
    this.shares = new OwnerShares(this.max);
  }

  /** Connections parked now (the pool counts them as in use; they are as good as idle). */
  get size(): number {
    return this.parked.length;
  }

  /** Takers waiting for a connection now. */
  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * A connection for `owner`: the one parked longest, or a new one of the pool; when none is free
   * or `owner` may not take one now ({@link OwnerShares}), the first freed that it may have (handed
   * over as it is, its transaction ended with the taker's first round trip). Longest first keeps
   * every parked connection in use under load: taking the most recent one left the rest parked
   * past {@link PARK_MS}, each then ended by a round trip of its own (half a ROLLBACK per request
   * of 32 concurrent get-by-id requests; a few per thousand this way).
   */
  take(owner: string, use: SnapshotUse): Promise<TakenConnection> {
    const free = this.shares.mayTake(owner, use) ? this.free(owner) : undefined;
    if (free) return free;
    return new Promise((resolve, reject) => this.waiters.push({ owner, use, resolve, reject }));
  }

  /** Gives back `client`, with no transaction open: to a waiting taker, else to the pool. */
  giveBack(client: pg.PoolClient): void {
    this.shares.released(client);
    if (isLost(client)) {
      this.destroy(client);
      return;
    }
    const waiter = this.nextWaiter();
    if (waiter) waiter.resolve(this.lend(waiter.owner, client, ""));
    else this.toPool(client, false);
    this.serveWaiters();
  }

  /** Destroys `client` (it failed); a waiting taker gets a new connection in its place. */
  destroy(client: pg.PoolClient): void {
    this.shares.released(client);
    this.toPool(client, true);
    this.serveWaiters();
  }

  /** Parks `client`, whose read-only transaction is over (handed to a waiting taker if there is one). */
  park(client: pg.PoolClient): void {
    this.shares.released(client);
    if (isLost(client)) {
      this.destroy(client);
      return;
    }
    const waiter = this.nextWaiter();
    if (waiter) waiter.resolve(this.lend(waiter.owner, client, "ROLLBACK"));
    else {
      this.parked.push({ client, since: performance.now() });
      this.timer ??= setTimeout(() => this.sweep(), PARK_MS).unref();
    }
    this.serveWaiters();
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

  /** The connection parked longest that still works (the broken ones go back destroyed). */
  private unpark(): pg.PoolClient | undefined {
    for (let parked = this.parked.shift(); parked; parked = this.parked.shift()) {
      if (!isLost(parked.client)) return parked.client;
      this.toPool(parked.client, true);
    }
    return undefined;
  }

  /** A new connection of the pool for `owner`, counted as its from the start. */
  private async open(owner: string): Promise<TakenConnection> {
    // Counted before it is opened, so takers meanwhile see it gone.
    this.shares.took(owner);
    this.out++;
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.out--;
      this.shares.gaveBack(owner);
      // What it counted may have kept another waiter out.
      this.serveWaiters();
      throw error;
    }
    this.shares.holders.set(client, owner);
    return { client, end: "" };
  }

  /** Returns `client` to the pool (destroyed when `broken`). */
  private toPool(client: pg.PoolClient, broken: boolean): void {
    this.out--;
    client.release(broken);
  }

  /** `client`, held from now on by `owner`. */
  private lend(owner: string, client: pg.PoolClient, end: string): TakenConnection {
    this.shares.took(owner);
    this.shares.holders.set(client, owner);
    return { client, end };
  }

  /**
   * Takes out the waiter to serve next: the first writer that may take one (it holds a lock
   * meanwhile), else of the readers whose owner may take one, the owner holding fewest.
   */
  private nextWaiter(): Waiter | undefined {
    const writer = this.waiters.findIndex(
      (waiter) => waiter.use === "write" && this.shares.mayTake(waiter.owner, "write"),
    );
    if (writer >= 0) return this.waiters.splice(writer, 1)[0];
    let best = -1;
    for (let i = 0; i < this.waiters.length; i++) {
      const { owner, use } = this.waiters[i] as Waiter;
      if (use === "write" || !this.shares.mayTake(owner, "read")) continue;
      if (best < 0 || this.shares.of(owner) < this.shares.of((this.waiters[best] as Waiter).owner)) best = i;
    }
    return best < 0 ? undefined : this.waiters.splice(best, 1)[0];
  }

  /** Serves the waiters that may take a connection, while one is parked or the pool has room. */
  private serveWaiters(): void {
    while (this.waiters.length > 0 && (this.parked.length > 0 || this.out < this.max)) {
      const waiter = this.nextWaiter();
      if (!waiter) return;
      (this.free(waiter.owner) as Promise<TakenConnection>).then(waiter.resolve, waiter.reject);
    }
  }

  /** A free connection for `owner`: the one parked longest, else a new one; none when the pool is out. */
  private free(owner: string): Promise<TakenConnection> | undefined {
    const client = this.unpark();
    if (client) return Promise.resolve(this.lend(owner, client, "ROLLBACK"));
    return this.out < this.max ? this.open(owner) : undefined;
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
