import type pg from "pg";
import { NOT_READY, type NotReady } from "../fast-path.js";
import type { KvIterateOptions, KvIterator, KvOperation, KvSnapshot } from "./kv.js";
import {
  inline,
  iterate,
  type RunSql,
  type Statement,
  selectValue,
  selectValues,
  writeStatement,
} from "./postgres-sql.js";

const BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

interface PendingGet {
  key: Buffer;
  resolve: (value: string | undefined) => void;
  reject: (error: unknown) => void;
}

/** Keeps track of work left running after its caller moved on (the store waits for it on close). */
export type Track = (work: Promise<void>) => void;

/**
 * One `REPEATABLE READ READ ONLY` transaction on its own connection. A mutation's commit ends it
 * and writes on that same connection, so a full pool cannot deadlock a mutation between its reads
 * and its commit. Round trips are what a PostgreSQL handler waits for, so: a snapshot begins and
 * takes its point in time in one round trip, a lazy one ({@link PostgresSnapshot.lazy}) with its
 * first read; a commit ends it and writes in one; and closing does not wait for the server.
 */
export class PostgresSnapshot implements KvSnapshot {
  private open = true;
  /** The connection, once the transaction has begun (a lazy snapshot begins at its first read). */
  private ready: Promise<pg.PoolClient> | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly table: string,
    private readonly track: Track,
  ) {}

  /** Starts a snapshot on a connection of `pool`: its point in time is now. */
  static async begin(pool: pg.Pool, table: string, track: Track): Promise<PostgresSnapshot> {
    const snapshot = new PostgresSnapshot(pool, table, track);
    // The snapshot is taken by the first statement: take it now, not at the first read.
    await snapshot.start("SELECT 1");
    return snapshot;
  }

  /** A snapshot whose point in time is its first read (no connection is held before it). */
  static lazy(pool: pg.Pool, table: string, track: Track): PostgresSnapshot {
    return new PostgresSnapshot(pool, table, track);
  }

  /** Begins the transaction with `first` in the same round trip; returns `first`'s rows. */
  private async start<R extends pg.QueryResultRow>(first: string): Promise<R[]> {
    let rows: R[] = [];
    this.ready = (async () => {
      const client = await this.pool.connect();
      try {
        const results = (await client.query(`${BEGIN}; ${first}`)) as unknown as pg.QueryResult<R>[];
        rows = results[1]?.rows ?? [];
      } catch (error) {
        client.release(true);
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

  /** Runs a read in the transaction, beginning it with this read when it has not begun. */
  private readonly run: RunSql = async (sql, params) => {
    this.require();
    if (this.ready === undefined) {
      const first = inline({ text: sql, values: params });
      if (first !== undefined) return this.start(first);
      await this.start("SELECT 1");
    }
    const client = await (this.ready as Promise<pg.PoolClient>);
    this.require();
    return (await client.query(sql, params)).rows;
  };

  /**
   * Point reads asked for at once (in the same tick: a handler's `Promise.all`, the counts a
   * mutation moves) go to the server as ONE query.
   */
  get(key: Buffer): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      const read = { key, resolve, reject };
      if (this.gets) this.gets.push(read);
      else {
        this.gets = [read];
        queueMicrotask(() => this.readGets());
      }
    });
  }

  private gets: PendingGet[] | undefined;

  private async readGets(): Promise<void> {
    const gets = this.gets ?? [];
    this.gets = undefined;
    try {
      if (gets.length === 1) {
        const only = gets[0] as PendingGet;
        only.resolve(await selectValue(this.run, this.table, only.key));
        return;
      }
      const found = await selectValues(
        this.run,
        this.table,
        gets.map((get) => get.key),
      );
      for (const get of gets) get.resolve(found.get(get.key.toString("hex")));
    } catch (error) {
      for (const get of gets) get.reject(error);
    }
  }

  /** Every read is a round trip to the server. */
  tryGetSync(): NotReady {
    return NOT_READY;
  }

  iterate(options: KvIterateOptions): KvIterator {
    return iterate(this.run, this.table, options);
  }

  /**
   * Ends the read-only transaction and writes `operations` (one atomic statement), sending `notify`
   * on the broadcast channel when the write commits; one round trip unless the batch is large.
   */
  async commit(operations: KvOperation[], notify?: string): Promise<void> {
    this.require();
    this.open = false;
    const write = writeStatement(this.table, operations, notify);
    if (this.ready === undefined) {
      // Nothing was read: there is no transaction to end.
      if (write) await this.pool.query(write.text, write.values);
      return;
    }
    const client = await this.ready;
    try {
      await endAndWrite(client, write);
    } catch (error) {
      client.release(true);
      throw error;
    }
    client.release();
  }

  /** Ends the transaction; the connection goes back to its pool once the server has answered. */
  async close(): Promise<void> {
    if (!this.open) return;
    this.open = false;
    const ready = this.ready;
    if (ready === undefined) return;
    this.track(
      ready.then(
        (client) =>
          client.query("ROLLBACK").then(
            () => client.release(),
            () => client.release(true),
          ),
        () => {},
      ),
    );
  }
}

/** `COMMIT`s the open read-only transaction on `client` and runs `write` after it. */
async function endAndWrite(client: pg.PoolClient, write: Statement | undefined): Promise<void> {
  if (write === undefined) {
    await client.query("COMMIT");
    return;
  }
  const text = inline(write);
  if (text !== undefined) {
    await client.query(`COMMIT; ${text}`);
    return;
  }
  await client.query("COMMIT");
  await client.query(write.text, write.values);
}
