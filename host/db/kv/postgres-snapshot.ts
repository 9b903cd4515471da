import type pg from "pg";
import { NOT_READY, type NotReady } from "../fast-path.js";
import type { KvIterateOptions, KvIterator, KvOperation, KvSnapshot } from "./kv.js";
import { iterate, selectValue, writeAndRelease } from "./postgres-sql.js";

/**
 * One `REPEATABLE READ READ ONLY` transaction on its own connection. A mutation's commit ends it
 * and writes on that same connection in one transaction, so a full pool cannot deadlock a mutation
 * between its reads and its commit.
 */
export class PostgresSnapshot implements KvSnapshot {
  private open = true;

  private constructor(
    private readonly client: pg.PoolClient,
    private readonly table: string,
  ) {}

  /** Starts a snapshot on a connection of `pool`. */
  static async begin(pool: pg.Pool, table: string): Promise<PostgresSnapshot> {
    const client = await pool.connect();
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      // The snapshot is taken by the first statement: take it now, not at the first read.
      await client.query("SELECT 1");
    } catch (error) {
      client.release(true);
      throw error;
    }
    return new PostgresSnapshot(client, table);
  }

  private require(): pg.PoolClient {
    if (!this.open) throw new Error("This snapshot is closed.");
    return this.client;
  }

  async get(key: Buffer): Promise<string | undefined> {
    return selectValue(this.require(), this.table, key);
  }

  /** Every read is a round trip to the server. */
  tryGetSync(): NotReady {
    return NOT_READY;
  }

  iterate(options: KvIterateOptions): KvIterator {
    return iterate(async () => this.require(), this.table, options);
  }

  /** Ends the read-only transaction and writes `operations` in one transaction on this connection. */
  async commit(operations: KvOperation[]): Promise<void> {
    const client = this.require();
    this.open = false;
    try {
      await client.query("COMMIT");
    } catch (error) {
      client.release(true);
      throw error;
    }
    await writeAndRelease(client, this.table, operations);
  }

  async close(): Promise<void> {
    if (!this.open) return;
    this.open = false;
    let broken = false;
    await this.client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    this.client.release(broken);
  }
}
