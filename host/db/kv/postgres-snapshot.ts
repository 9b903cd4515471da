import type pg from "pg";
import { NOT_READY, type NotReady } from "../fast-path.js";
import { LARGE_BATCH } from "./batch-fold.js";
import type { KeptScan, KvIterateOptions, KvIterator, KvOperation, KvSnapshot, SnapshotUse } from "./kv.js";
import type { LockFence } from "./lock-fence.js";
import { fencedFailure } from "./postgres-fence.js";
import type { ConnectionParking } from "./postgres-parking.js";
import { PointReads } from "./postgres-point-reads.js";
import { runReads } from "./postgres-prepared.js";
import { type PostgresScanMemos, SNAPSHOT_NAME } from "./postgres-scan-memos.js";
import {
  inline,
  iterate,
  type Statement,
  valuesInOrder,
  valuesStatement,
  writeStatement,
} from "./postgres-sql.js";
import { TickReads } from "./postgres-tick-reads.js";
import { ViewReads } from "./postgres-view-reads.js";
import { runWrite, writeChunks } from "./postgres-write.js";

const BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
/** A statement that only takes the transaction's snapshot (REPEATABLE READ takes it at the first one). */
const TAKE_SNAPSHOT: Statement = { text: "SELECT 1", values: [] };

/**
 * One `REPEATABLE READ READ ONLY` transaction on its own connection. A mutation's commit ends it
 * and writes on that same connection, so a full pool cannot deadlock a mutation between its reads
 * and its commit. Round trips are what a PostgreSQL handler waits for, so: a snapshot begins and
 * takes its point in time in one round trip, a lazy one ({@link PostgresSnapshot.lazy}) with its
 * first read; statements asked for in the same tick (by one handler, or by the handlers that share
 * a lazy snapshot: postgres-kv.ts) go as one message (postgres-tick-reads.ts); a commit ends it and writes in one; and
 * closing leaves the end of the transaction to the connection's next use.
 */
export class PostgresSnapshot implements KvSnapshot {
  private open = true;
  /** The connection, once the transaction has begun (a lazy snapshot begins at its first read). */
  private ready: Promise<pg.PoolClient> | undefined;
  /** What readers keep for this view (only with `memos`: postgres-view-reads.ts). */
  private readonly view: ViewReads | undefined;
  /** Reads asked for in one tick, sent as one message (postgres-tick-reads.ts). */
  private readonly reads: TickReads;
  /** Point reads, merged per tick and remembered (postgres-point-reads.ts). */
  private readonly points: PointReads;

  private constructor(
    private readonly connections: ConnectionParking,
    private readonly table: string,
    /** Whose work it is: connections are shared fairly between owners (postgres-parking.ts). */
    private readonly owner: string,
    /** A reader's (held to its owner's share) or a writer's (see `SnapshotUse`). */
    private readonly use: SnapshotUse,
    /** Where a reader's view finds the scans kept for it, and keeps its own; none for a writer. */
    memos?: PostgresScanMemos,
  ) {
    this.reads = new TickReads({
      require: () => this.require(),
      connection: () => this.ready,
      start: (first) => this.start(first),
    });
    this.points = new PointReads(this.reads.run, table);
    this.view = memos && new ViewReads(memos, owner);
  }

  /** Starts a snapshot on a connection of `connections` for `owner`: its point in time is now. */
  static async begin(
    connections: ConnectionParking,
    table: string,
    owner: string,
    use: SnapshotUse,
  ): Promise<PostgresSnapshot> {
    const snapshot = new PostgresSnapshot(connections, table, owner, use);
    // The snapshot is taken by the first statement: take it now, not at the first read.
    await snapshot.start([TAKE_SNAPSHOT]);
    return snapshot;
  }

  /**
   * A snapshot whose point in time is its first read (no connection is held before it). With
   * `memos`, it names its view in the same round trip and keeps its scans there.
   */
  static lazy(
    connections: ConnectionParking,
    table: string,
    owner: string,
    use: SnapshotUse,
    memos?: PostgresScanMemos,
  ): PostgresSnapshot {
    return new PostgresSnapshot(connections, table, owner, use, memos);
  }

  /**
   * Begins the transaction once the event loop has handled what arrived with this turn (the
   * requests read in one poll share it: each was made before it begins), so that kept scans may
   * answer at once (see {@link tryScanSync}). Never rejects: a failure is the next read's.
   */
  async beginSoon(): Promise<void> {
    try {
      if (this.ready === undefined) await new Promise((resolve) => setImmediate(resolve));
      await (this.ready ?? this.reads.run(TAKE_SNAPSHOT.text, []));
    } catch {
      // The next read fails the same way, and says so.
    }
  }

  /** Whether this snapshot names its view and keeps what its readers read (postgres-scan-memos.ts). */
  get keepsReads(): boolean {
    return this.view !== undefined;
  }

  /** True once the transaction has begun (its first statement is on its way): its point in time is set. */
  get begun(): boolean {
    return this.ready !== undefined;
  }

  /**
   * Begins the transaction with `first` (reads) in the same round trip, and returns their rows;
   * undefined when they cannot go as one message (see `preparedReads`): send them with parameters.
   */
  private async start(first: Statement[]): Promise<pg.QueryResultRow[][] | undefined> {
    let rows: pg.QueryResultRow[][] | undefined;
    const view = this.view;
    this.ready = (async () => {
      const { client, end } = await this.connections.take(this.owner, this.use);
      const lead = [...(end ? [end] : []), BEGIN];
      // A retry follows a BEGIN whose transaction the failure aborted.
      const options = { begins: true, retryLead: ["ROLLBACK", BEGIN] };
      try {
        rows = await runReads(client, lead, view ? [SNAPSHOT_NAME, ...first] : first, options);
        if (rows === undefined) {
          const taken = await runReads(client, lead, [view ? SNAPSHOT_NAME : TAKE_SNAPSHOT], options);
          view?.named(taken?.[0]);
        } else if (view) view.named(rows.shift());
      } catch (error) {
        this.connections.destroy(client);
        throw error;
      }
      return client;
    })();
    await this.ready;
    return rows;
  }

  private require(): void {
    if (!this.open) throw new Error("This snapshot is closed.");
  }

  get(key: Buffer): Promise<string | undefined> {
    if (!this.open) return Promise.reject(new Error("This snapshot is closed."));
    return this.points.get(key);
  }

  /**
   * A key this snapshot has read before, at once (its view never changes); any other needs a round
   * trip. The members of a group commit read the same rows again (a reference's target, a count):
   * answered here, a member's write goes on without waiting for a turn of the event loop, and
   * without a second entry into its isolate.
   */
  tryGetSync(key: Buffer): string | undefined | NotReady {
    if (!this.open) return NOT_READY;
    const known = this.points.tryGetSync(key);
    if (known !== NOT_READY || this.view === undefined) return known;
    return this.view.tryGet(key);
  }

  /**
   * A reader's {@link get}, kept for the readers after it with the same view; `kept` when it was
   * kept already (a reader begun early would have been answered at once).
   */
  async readPoint(key: Buffer): Promise<{ value: string | undefined; kept: boolean }> {
    const value = await this.get(key);
    return { value, kept: this.view?.keepPoint(key, value) ?? false };
  }

  /** A scan; a reader's is kept for the readers after it that have the same view (postgres-scan-memos.ts). */
  iterate(options: KvIterateOptions): KvIterator {
    const scan = iterate(this.reads.run, this.table, options);
    return this.view ? this.view.recording(options, scan) : scan;
  }

  /** A scan kept for this view (by any reader with the same, on this host), at once; else NOT_READY. */
  tryScanSync(options: KvIterateOptions, want: number): KeptScan | NotReady {
    if (!this.open || this.view === undefined) return NOT_READY;
    return this.view.tryScan(options, want);
  }

  /**
   * Whether a scan with `options` that took `entries` entries is kept for this view (a reader
   * begun late could have been answered at once).
   */
  keeps(options: KvIterateOptions, entries: number): boolean {
    return this.view?.keeps(options, entries) ?? false;
  }

  /**
   * Ends the read-only transaction and writes `operations` (one atomic statement), sending `notify`
   * on the broadcast channel when the write commits; one round trip unless the batch is large.
   */
  async commit(operations: KvOperation[], notify?: string, fence?: LockFence): Promise<void> {
    this.require();
    // Made first: should it throw (a batch that does not fold), the transaction is still this one's to close.
    const made = writeChunks(operations);
    const chunks = Array.isArray(made) ? made : await made;
    this.open = false;
    // Nothing read: no transaction of its own to end, but maybe a parked one.
    const { client, end } = this.ready
      ? { client: await this.ready, end: "COMMIT" }
      : await this.connections.take(this.owner, this.use);
    try {
      await runWrite(client, this.table, chunks, notify, end, fence);
    } catch (error) {
      this.connections.destroy(client);
      throw error;
    }
    this.connections.giveBack(client);
  }

  /**
   * {@link commit}, then a snapshot begun after the write on the same connection, which has read
   * `read`: ONE message ends this transaction, writes in a transaction of its own (committed before
   * the next begins, so the next sees it) and begins the next with its reads. Answers the next
   * snapshot, or none when the message failed after its write committed (the server said so
   * before the failure); rejects when the write did not commit, or when the connection was lost
   * before the server said (as any commit whose answer is lost). Undefined, with nothing done,
   * when it cannot be one message: no transaction begun yet, a write too large to send as text,
   * or one of more than {@link LARGE_BATCH} operations (which {@link commit} folds over turns of
   * the event loop; folded here it would hold the main thread in one stretch).
   */
  async commitAndContinue(
    operations: KvOperation[],
    notify: string | undefined,
    read: Buffer[],
    fence?: LockFence,
  ): Promise<{ next: PostgresSnapshot | undefined } | undefined> {
    this.require();
    if (operations.length > LARGE_BATCH) return undefined;
    const write = writeStatement(this.table, operations, notify, fence?.guards);
    const text = write === undefined ? "" : inline(write);
    const reads = read.length > 0 ? valuesStatement(this.table, read) : TAKE_SNAPSHOT;
    if (this.ready === undefined || text === undefined || inline(reads) === undefined) return undefined;
    this.open = false;
    const client = await this.ready;
    // The command tags below must be this message's: reads still on their way answer first.
    await this.reads.settled();
    const next = new PostgresSnapshot(this.connections, this.table, this.owner, this.use);
    // The statements' command tags, as the server finishes each: the write's COMMIT is the 4th.
    const done: string[] = [];
    const finished = (message: { text?: unknown }) => done.push(String(message.text));
    client.connection.on("commandComplete", finished);
    try {
      // The reads fit as text (checked above): they go in this message, after the write.
      const lead = ["COMMIT", ...(text ? ["BEGIN", text, "COMMIT"] : []), BEGIN];
      const answered = await runReads(client, lead, [reads], { begins: true, writes: true });
      if (!answered) throw new Error("A commit's reads that fit as text did not.");
      const rows = (answered[0] ?? []) as Array<{ key: Buffer; value: string }>;
      const values = read.length > 0 ? valuesInOrder(read, rows) : [];
      for (const [i, key] of read.entries()) next.points.remember(key, values[i]);
    } catch (error) {
      this.connections.destroy(client);
      if (text && done.length >= 4 && done[3] === "COMMIT") return { next: undefined };
      throw fence ? fencedFailure(error) : error;
    } finally {
      client.connection.off("commandComplete", finished);
    }
    next.ready = Promise.resolve(client);
    return { next };
  }

  /** Ends the transaction, on the server with the next use of its connection (see postgres-parking.ts). */
  async close(): Promise<void> {
    if (!this.open) return;
    this.open = false;
    void this.ready?.then(
      (client) => this.connections.park(client),
      () => {},
    );
  }
}
