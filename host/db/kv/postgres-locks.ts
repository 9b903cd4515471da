import { createHash } from "node:crypto";
import type pg from "pg";
import type { IfFree, LockOptions } from "./kv.js";
import type { LockFence } from "./lock-fence.js";
import { OwnerLimit } from "./owner-limit.js";
import { fenceKeys, fenceOf, takingStatement } from "./postgres-fence.js";
import type { Track } from "./postgres-parking.js";
import { readOnly } from "./postgres-silence.js";
import { inline, valuesInOrder, valuesStatement } from "./postgres-sql.js";

/** Lock connections that turns (see {@link PostgresLocks.inOwnerTurn}) never take. */
export const LOCKS_KEPT_FROM_TURNS = 3;

/**
 * The 64-bit advisory lock key of lock `name` on `table`'s store: the first 8 bytes of a SHA-256,
 * so that two names sharing a key (which would only make them wait for each other) is as unlikely
 * as a hash collision. The table is part of it: stores sharing one database keep their own locks.
 */
export function advisoryKey(table: string, name: string): bigint {
  return createHash("sha256").update(`${table}\0${name}`).digest().readBigInt64BE(0);
}

/** How long (ms) a lock taken only if free may wait for a holder releasing it. */
const TRY_LOCK_MS = 200;

/** PostgreSQL's error code for a lock not granted within `lock_timeout`. */
const LOCK_NOT_AVAILABLE = "55P03";

/** A lock's transaction, open on its own connection, what was read as it was taken, and its fence. */
interface HeldLock {
  client: pg.PoolClient;
  values: Array<string | undefined> | undefined;
  fence: LockFence;
}

/**
 * The locks one process takes on a PostgreSQL store, for its bus (postgres-bus.ts):
 * transaction-scoped advisory locks held in an open transaction on a connection of a lock pool,
 * outer ones on a pool of their own, and the turns owners take those connections in.
 */
export class PostgresLocks {
  /** Each owner's turns (see {@link inOwnerTurn}): shared as the lock connections they take. */
  private readonly owners: OwnerLimit;
  /** Each owner's outer locks (see `LockOptions.owner`): one at a time. */
  private readonly outerOwners: OwnerLimit;

  constructor(
    private readonly locks: pg.Pool,
    private readonly outerLocks: pg.Pool,
    private readonly table: string,
    private readonly track: Track,
  ) {
    // Locks taken outside turns (storage quotas, sign-in codes, a deploy's) always find a few:
    // turns held by a handful of busy developers took every one, and an upload waited seconds.
    const places = Math.max(1, (locks.options.max ?? 10) - LOCKS_KEPT_FROM_TURNS);
    // As snapshot connections are shared (owner-shares.ts): three quarters for one owner at most,
    // and a few kept for owners holding none.
    this.owners = new OwnerLimit(
      places,
      Math.max(1, Math.floor((places * 3) / 4)),
      Math.max(2, Math.ceil(places / 16)),
    );
    this.outerOwners = new OwnerLimit(outerLocks.options.max ?? 3, 1, 0);
  }

  /** Runs `work` in a turn of `owner`'s (see `HostBus.inOwnerTurn`). */
  inOwnerTurn<T>(owner: string, work: () => Promise<T>): Promise<T> {
    return this.owners.run(owner, work);
  }

  /** Runs `work` holding lock `name` (see `HostBus.lockAcrossProcesses`). */
  lock<T>(
    name: string,
    work: (read: Array<string | undefined> | undefined, fence: LockFence) => Promise<T>,
    options?: LockOptions,
  ): Promise<T> {
    return this.inOuterTurn(options, async (untagged) =>
      this.runHolding((await this.hold(name, untagged, true)) as HeldLock, work),
    );
  }

  /** Runs `work` holding lock `name` if no other session holds it (see `HostBus.lockAcrossProcessesIfFree`). */
  lockIfFree<T>(
    name: string,
    work: (fence: LockFence) => Promise<T>,
    options?: LockOptions,
  ): Promise<IfFree<T>> {
    return this.inOuterTurn(options, async (untagged): Promise<IfFree<T>> => {
      const held = await this.hold(name, untagged, false);
      return held
        ? { ran: true, value: await this.runHolding(held, (_read, fence) => work(fence)) }
        : { ran: false };
    });
  }

  /**
   * Runs `take` (a lock's taking and its work) in its owner's turn when it is an owner's outer
   * lock (see `LockOptions.owner`: one at a time), with the options it needs then.
   */
  private inOuterTurn<R>(
    options: LockOptions | undefined,
    take: (options?: LockOptions) => Promise<R>,
  ): Promise<R> {
    if (!options?.outer || options.owner === undefined) return take(options);
    const { owner, ...untagged } = options;
    return this.outerOwners.run(owner, () => take(untagged));
  }

  /**
   * Takes lock `name` in a transaction of a connection of its own (an outer lock's from the outer
   * pool), with the reads `options.read` asks for; waiting for it when `wait`, else undefined when
   * another session holds it.
   */
  private async hold(
    name: string,
    options: LockOptions | undefined,
    wait: boolean,
  ): Promise<HeldLock | undefined> {
    const client = await (options?.outer ? this.outerLocks : this.locks).connect();
    const key = advisoryKey(this.table, name);
    const wanted = options?.read ?? [];
    // READ COMMITTED: the read is a statement of its own, so it sees what committed before the lock.
    const read = wanted.length > 0 ? inline(valuesStatement(this.table, wanted)) : undefined;
    // Only if free: given up after a moment, so that a holder whose COMMIT is on its way (released
    // here already) does not count as holding it.
    const take = wait ? "" : `SET LOCAL lock_timeout = ${TRY_LOCK_MS}; `;
    // With the lock: its fence's holding, and the wait for fenced writes of the holder before
    // (postgres-fence.ts), before the reads, which then see those writes.
    const keys = fenceKeys(advisoryKey(this.table, `${name}\0writes`));
    const taking = takingStatement(key, keys);
    try {
      // Only a lock's taking (and reads): its caller does nothing until it is answered. The
      // connection idles in its transaction while the lock is held: a server whose operator set
      // idle_in_transaction_session_timeout would end it, and the lock with it, mid-work.
      const results = (await client.query(
        readOnly(
          `BEGIN; SET LOCAL idle_in_transaction_session_timeout = 0; ${take}${taking}${read ? `; ${read}` : ""}`,
        ),
      )) as unknown as pg.QueryResult<{ key: Buffer; value: string }>[];
      return {
        client,
        values: read ? valuesInOrder(wanted, results.at(-1)?.rows ?? []) : undefined,
        fence: fenceOf(keys),
      };
    } catch (error) {
      if (!wait && (error as { code?: string }).code === LOCK_NOT_AVAILABLE) {
        // Its transaction failed: ending it rolls it back.
        this.end(client);
        return undefined;
      }
      client.release(true);
      throw error;
    }
  }

  /** Runs `work` while `held` holds its lock, then ends its transaction (releasing the lock). */
  private async runHolding<T>(
    held: HeldLock,
    work: (read: Array<string | undefined> | undefined, fence: LockFence) => Promise<T>,
  ): Promise<T> {
    try {
      return await work(held.values, held.fence);
    } finally {
      this.end(held.client);
    }
  }

  /** Ends a lock's transaction and gives its connection back. */
  private end(client: pg.PoolClient): void {
    this.track(
      // Nothing was written: ending it (a silent server) releases the lock as well.
      client.query(readOnly("COMMIT")).then(
        () => client.release(),
        () => client.release(true),
      ),
    );
  }
}
