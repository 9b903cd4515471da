import type pg from "pg";
import { LIMITS } from "../../../sdk/protocol/index.js";
import type { KvIterateOptions, KvIterator, KvOperation, KvRange, KvSnapshot, SnapshotUse } from "./kv.js";
import type { LockFence } from "./lock-fence.js";
import { PostgresBus } from "./postgres-bus.js";
import { ConnectionParking, watchForLoss } from "./postgres-parking.js";
import { PostgresScanMemos } from "./postgres-scan-memos.js";
import { type SharedSnapshot, SharedSnapshotLoan } from "./postgres-shared-snapshot.js";
import { SilenceWatch } from "./postgres-silence.js";
import { PostgresSnapshot } from "./postgres-snapshot.js";
import { iterate, runOn, selectValue, selectValues } from "./postgres-sql.js";
import { watchedPool } from "./postgres-watched-pool.js";
import { runClear, runWrite, writeChunks } from "./postgres-write.js";
import { KvStoreBase } from "./store.js";

/**
 * Connections for snapshots (a handler holds one from its first read to its commit or end), for
 * everything else (point reads, batches and clears outside snapshots, broadcasts), and for locks.
 * Snapshots have a pool of their own: a handler that holds one may wait for work that reads
 * outside it (its isolate loading the capsule's code from the database); sharing one pool, a burst
 * of handlers larger than it would hold every connection and wait for that read forever.
 * Outer locks (deploys, deletes: see LockOptions) have a pool of their own for the same reason: at
 * most that many deploys run at once on a host, and the others wait without holding a connection.
 * 28 + 4 + 13 + 3 + the listener: two hosts fit PostgreSQL's default of 100 connections.
 */
const SNAPSHOT_CONNECTIONS = 28;
const LOCK_CONNECTIONS = 13;
const OUTER_LOCK_CONNECTIONS = 3;
/**
 * Deploys and deletes holding an outer lock clear ranges on this pool (a deleted deployment's
 * rows, a dropped index: seconds for large ones), one each at most: it keeps one connection beyond
 * them for everyone else's sign-ins and record reads (in a probe with as many clears as
 * connections, every session read waited for as long as they ran). A load's clearing of indexes a
 * crash left runs outside those locks.
 */
const DIRECT_CONNECTIONS = OUTER_LOCK_CONNECTIONS + 1;
/**
 * Readers sharing one lazy snapshot at most (see `readSnapshot`). Their reads of a tick go in one
 * message and are answered together, so one reader's large scan delays the others' answers by its
 * own time: a bound keeps that small.
 */
const SHARED_READERS = 16;

/**
 * Creates the store's tables unless they exist. `CREATE TABLE IF NOT EXISTS` is not safe against
 * itself: two hosts opening a new database at once both pass the check, and the loser fails on
 * the table's row type ("type ... already exists"). A transaction-scoped advisory lock on the
 * table's name makes the second wait for the first to commit, then find the tables. The lock rows
 * of earlier versions are dropped: a host of such a version still running on the database then
 * fails its locks loudly instead of taking locks nobody else honours (see postgres-bus.ts).
 */
async function createTables(pool: pg.Pool, table: string): Promise<void> {
  await pool.query(
    `BEGIN;
     SELECT pg_advisory_xact_lock(hashtext('platform-kv-tables:${table}'));
     CREATE TABLE IF NOT EXISTS ${table} (key bytea PRIMARY KEY, value text NOT NULL);
     DROP TABLE IF EXISTS ${table}_locks;
     COMMIT`,
  );
}

/**
 * Refuses a database whose encoding is not UTF-8: values are JSON text, and a LATIN1 or
 * SQL_ASCII database would refuse (or mangle) every value with characters beyond its set.
 */
async function requireUtf8(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ server_encoding: string }>("SHOW server_encoding");
  const encoding = rows[0]?.server_encoding ?? "unknown";
  if (encoding !== "UTF8")
    throw new Error(
      `The PostgreSQL database's encoding is ${encoding}; the platform stores UTF-8 text. Create the database with ENCODING 'UTF8' (createdb -E UTF8 -T template0 <name>).`,
    );
}

/**
 * The PostgreSQL backend: one table of `bytea` keys (PostgreSQL compares `bytea` bytewise, as we
 * do) and text values, plain SQL throughout. Snapshots are postgres-snapshot.ts; the bus of the
 * hosts sharing the database is postgres-bus.ts.
 */
export class PostgresKv extends KvStoreBase {
  readonly kind = "postgres";
  readonly supports = { syncReads: false, commitKeepsSnapshot: false, sharedAcrossProcesses: true } as const;

  private constructor(
    readonly bus: PostgresBus,
    private readonly pool: pg.Pool,
    private readonly snapshots: pg.Pool,
    private readonly locks: pg.Pool,
    private readonly outerLocks: pg.Pool,
    private readonly table: string,
    private readonly inFlight: Set<Promise<void>>,
    /** Snapshots take their connections here: see postgres-parking.ts. */
    private readonly parking: ConnectionParking,
    private readonly silence: SilenceWatch,
    /** Reads kept for the latest view readers had, by its name (postgres-scan-memos.ts); none when the server cannot name views. */
    private readonly memos: PostgresScanMemos | undefined,
  ) {
    super();
  }

  /**
   * Connects to `url` (`postgres://...`), creating the table when missing. `silenceMs`: how long a
   * round trip may go unanswered before the server is asked whether it still answers (see
   * {@link SilenceWatch}; `LIMITS.databaseSilenceMs` by default); `listenerCheckMs`: how often the
   * listener is checked (`LIMITS.databaseListenerCheckMs` by default).
   */
  static async open(
    url: string,
    options: { table?: string; silenceMs?: number; listenerCheckMs?: number } = {},
  ): Promise<PostgresKv> {
    const table = options.table ?? "platform_kv";
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) throw new Error(`Invalid table name ${table}.`);
    const silence = new SilenceWatch(url, options.silenceMs ?? LIMITS.databaseSilenceMs);
    const pool = watchedPool(silence, { connectionString: url, max: DIRECT_CONNECTIONS });
    const snapshots = watchedPool(silence, { connectionString: url, max: SNAPSHOT_CONNECTIONS });
    const locks = watchedPool(silence, { connectionString: url, max: LOCK_CONNECTIONS });
    const outerLocks = watchedPool(silence, { connectionString: url, max: OUTER_LOCK_CONNECTIONS });
    // Idle clients can die when the server restarts; the pool replaces them. Those out of it too.
    // A lost connection may be a crashed server, which may give transaction ids out again: views
    // named before it are forgotten (postgres-scan-memos.ts).
    let memos: PostgresScanMemos | undefined;
    for (const each of [pool, snapshots, locks, outerLocks]) {
      each.on("error", () => {});
      watchForLoss(each, () => memos?.forget());
    }
    try {
      await requireUtf8(pool);
      await createTables(pool, table);
      memos = (await PostgresScanMemos.supported(pool)) ? new PostgresScanMemos() : undefined;
    } catch (error) {
      silence.close();
      await Promise.all([pool.end(), snapshots.end(), locks.end(), outerLocks.end()]);
      throw error;
    }
    const inFlight = new Set<Promise<void>>();
    const bus = await PostgresBus.open(
      url,
      { locks, outerLocks, notify: pool },
      table,
      trackIn(inFlight),
      options.listenerCheckMs,
    );
    const parking = new ConnectionParking(snapshots, trackIn(inFlight));
    return new PostgresKv(bus, pool, snapshots, locks, outerLocks, table, inFlight, parking, silence, memos);
  }

  /**
   * How full each connection pool is (the host's metrics read it): `direct` reads and writes,
   * `snapshots`, `locks` and `outer-locks`, as in the connection budget above.
   */
  poolUse(): Array<{ pool: string; max: number; total: number; idle: number; waiting: number }> {
    const pools = {
      direct: this.pool,
      snapshots: this.snapshots,
      locks: this.locks,
      "outer-locks": this.outerLocks,
    };
    return Object.entries(pools).map(([pool, each]) => ({
      pool,
      max: each.options.max,
      total: each.totalCount,
      idle: each.idleCount + (each === this.snapshots ? this.parking.size : 0),
      waiting: each.waitingCount + (each === this.snapshots ? this.parking.waiting : 0),
    }));
  }

  protected _get(key: Buffer): Promise<string | undefined> {
    return selectValue(runOn(this.pool), this.table, key);
  }

  protected async _getMany(keys: Buffer[]): Promise<Array<string | undefined>> {
    return selectValues(runOn(this.pool), this.table, keys);
  }

  protected _iterate(options: KvIterateOptions): KvIterator {
    return iterate(runOn(this.pool), this.table, options);
  }

  protected _snapshot(owner: string, use: SnapshotUse): Promise<KvSnapshot> {
    return PostgresSnapshot.begin(this.parking, this.table, owner, use);
  }

  /** No connection until the first read, which begins the transaction in the same round trip. */
  protected override async _lazySnapshot(owner: string): Promise<KvSnapshot> {
    return PostgresSnapshot.lazy(this.parking, this.table, owner, "write");
  }

  /** Each owner's readers' lazy snapshot that has not begun yet: its readers made now join it. */
  private readonly readers = new Map<string, SharedSnapshot>();

  /**
   * Readers whose first reads come before a lazy snapshot's first read share it (up to
   * {@link SHARED_READERS}): their first reads of one tick go as one message (point reads as one
   * query), on one connection instead of one each. A reader joins with its own first read (see
   * postgres-shared-snapshot.ts), so each still sees every write that landed before it was made
   * (on this host or another). Only readers of one owner share: the connection counts as that
   * owner's in the fair sharing of connections (postgres-parking.ts). While an owner's readers are
   * answered from kept reads, a reader's snapshot begins as its handler is about to run
   * (`prepare`), so the handler finds them at once (postgres-scan-memos.ts).
   */
  protected override async _readSnapshot(owner: string): Promise<KvSnapshot> {
    const memos = this.memos;
    return new SharedSnapshotLoan(
      () => this.joinReaders(owner),
      (done) => {
        if (this.readers.get(owner) === done) this.readers.delete(owner);
      },
      memos && {
        shouldBegin: () => memos.beginEarly(owner),
        done: (atOnce) => memos.scored(owner, atOnce),
      },
    );
  }

  /** `owner`'s readers' snapshot not begun yet, counting one more reader in (a new one when none may be joined). */
  private joinReaders(owner: string): SharedSnapshot {
    let shared = this.readers.get(owner);
    if (!shared || shared.snapshot.begun || shared.readers >= SHARED_READERS) {
      const memos = this.memos?.keepsFor(owner) ? this.memos : undefined;
      const snapshot = PostgresSnapshot.lazy(this.parking, this.table, owner, "read", memos);
      shared = { snapshot, readers: 0 };
      this.readers.set(owner, shared);
    }
    shared.readers++;
    return shared;
  }

  /**
   * One statement, atomic on its own, in one round trip; a large batch in chunks (postgres-write.ts).
   * The broadcasts go in the statement (or the last chunk's), sent only if the write commits.
   */
  protected async _batch(
    operations: KvOperation[],
    announce: readonly string[],
    fence?: LockFence,
  ): Promise<void> {
    const made = writeChunks(operations);
    const chunks = Array.isArray(made) ? made : await made;
    if (chunks.length === 0 && announce.length === 0) return;
    const client = await this.pool.connect();
    try {
      const notify = announce.map((message) => this.bus.tagged(message));
      await runWrite(client, this.table, chunks, notify, "", fence);
    } catch (error) {
      client.release(true);
      throw error;
    }
    client.release();
  }

  /** The broadcast goes with the write, in the same round trip, sent only if the write commits. */
  protected async _commit(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    announce?: string,
    fence?: LockFence,
  ): Promise<void> {
    if (!(snapshot instanceof PostgresSnapshot)) throw new Error("Not a snapshot of this store.");
    await snapshot.commit(operations, announce === undefined ? undefined : this.bus.tagged(announce), fence);
  }

  /**
   * The commit, the next snapshot's BEGIN and its reads: one message (see PostgresSnapshot), or
   * where that cannot be, the commit and then the reads.
   */
  protected override async _commitAndContinue(
    snapshot: KvSnapshot,
    operations: KvOperation[],
    announce: string | undefined,
    read: Buffer[],
    owner: string,
    fence: LockFence | undefined,
  ): Promise<KvSnapshot | undefined> {
    if (!(snapshot instanceof PostgresSnapshot)) throw new Error("Not a snapshot of this store.");
    const notify = announce === undefined ? undefined : this.bus.tagged(announce);
    const done = await snapshot.commitAndContinue(operations, notify, read, fence);
    return done ? done.next : super._commitAndContinue(snapshot, operations, announce, read, owner, fence);
  }

  protected async _clear(range: KvRange, fence?: LockFence): Promise<void> {
    await runClear(this.pool, this.table, range, fence);
  }

  protected async _close(): Promise<void> {
    this.parking.endAll();
    await Promise.all(this.inFlight);
    await this.bus.close();
    this.silence.close();
    await Promise.all([this.pool.end(), this.snapshots.end(), this.locks.end(), this.outerLocks.end()]);
  }
}

/** Adds work to `inFlight` until it settles (it never rejects: see {@link PostgresSnapshot.close}). */
function trackIn(inFlight: Set<Promise<void>>): (work: Promise<void>) => void {
  return (work) => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  };
}
