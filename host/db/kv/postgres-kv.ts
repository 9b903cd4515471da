import { randomBytes } from "node:crypto";
import pg from "pg";
import { NOT_READY, type NotReady } from "../fast-path.js";
import type { KvIterateOptions, KvIterator, KvOperation, KvRange, KvSnapshot, KvStore } from "./kv.js";

/**
 * Connections for snapshots (a handler holds one from its first read to its commit or end), for
 * everything else (point reads, batches and clears outside snapshots, broadcasts), and for locks.
 * Snapshots have a pool of their own: a handler that holds one may wait for work that reads
 * outside it (its isolate loading the capsule's code from the database); sharing one pool, a burst
 * of handlers larger than it would hold every connection and wait for that read forever.
 * 28 + 4 + 16 + the listener: two hosts fit PostgreSQL's default of 100 connections.
 */
const SNAPSHOT_CONNECTIONS = 28;
const DIRECT_CONNECTIONS = 4;
const LOCK_CONNECTIONS = 16;
const CHANNEL = "platform";

type Queryable = Pick<pg.PoolClient, "query">;

/**
 * Runs batched puts and deletes in order. A run of puts is one upsert (the last value of a key
 * wins), a run of deletes one `DELETE ... = ANY`.
 */
async function applyOperations(client: Queryable, table: string, operations: KvOperation[]): Promise<void> {
  let at = 0;
  while (at < operations.length) {
    const type = (operations[at] as KvOperation).type;
    let end = at;
    while (end < operations.length && (operations[end] as KvOperation).type === type) end++;
    const run = operations.slice(at, end);
    if (type === "put") {
      const latest = new Map<string, { key: Buffer; value: string }>();
      for (const op of run as Array<{ key: Buffer; value: string }>) latest.set(op.key.toString("hex"), op);
      const rows = [...latest.values()];
      await client.query(
        `INSERT INTO ${table} (key, value) SELECT * FROM unnest($1::bytea[], $2::text[]) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
        [rows.map((r) => r.key), rows.map((r) => r.value)],
      );
    } else {
      await client.query(`DELETE FROM ${table} WHERE key = ANY($1::bytea[])`, [run.map((op) => op.key)]);
    }
    at = end;
  }
}

/**
 * Writes `operations` in one transaction on `client`, then releases it (destroying it when the
 * write failed, so a broken connection never goes back to the pool).
 */
async function writeAndRelease(
  client: pg.PoolClient,
  table: string,
  operations: KvOperation[],
): Promise<void> {
  let broken = false;
  try {
    if (operations.length > 0) {
      await client.query("BEGIN");
      await applyOperations(client, table, operations);
      await client.query("COMMIT");
    }
  } catch (error) {
    broken = true;
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * Walks a range with keyset pagination: each batch is one ordered, bounded SELECT starting after
 * the last key seen. On a snapshot's connection every batch sees the same snapshot.
 */
function iterate(client: () => Promise<Queryable>, table: string, options: KvIterateOptions): KvIterator {
  const reverse = options.reverse === true;
  const values = options.values !== false;
  let last: Buffer | undefined;
  let left = options.limit ?? Number.POSITIVE_INFINITY;
  let done = false;
  return {
    next: async (max) => {
      if (done || left <= 0) return [];
      const n = Math.min(max, left);
      const bound = last === undefined ? "" : reverse ? " AND key < $3" : " AND key > $3";
      const sql = `SELECT key${values ? ", value" : ""} FROM ${table} WHERE key >= $1 AND key < $2${bound} ORDER BY key ${reverse ? "DESC" : "ASC"} LIMIT ${n}`;
      const params: unknown[] = [options.gte, options.lt];
      if (last !== undefined) params.push(last);
      const { rows } = await (await client()).query<{ key: Buffer; value?: string }>(sql, params);
      if (rows.length < n) done = true;
      left -= rows.length;
      const tail = rows.at(-1);
      if (tail) last = tail.key;
      return rows.map((row) => [row.key, row.value ?? ""]);
    },
    close: async () => {
      done = true;
    },
  };
}

/**
 * The PostgreSQL backend: one table of `bytea` keys (PostgreSQL compares `bytea` bytewise, as we
 * do) and text values. A snapshot is one `REPEATABLE READ READ ONLY` transaction on its own
 * connection, and a mutation's commit ends it and writes on that same connection in one
 * transaction (so a full pool cannot deadlock a mutation between its reads and its commit). Locks
 * across processes are row locks on a separate pool; broadcasts are LISTEN/NOTIFY on one channel
 * (the one PostgreSQL-specific feature used; everything else is plain SQL).
 */
export class PostgresKv implements KvStore {
  readonly kind = "postgres";
  readonly shared = true;
  private readonly handlers = new Set<(message: string) => void>();
  /** Tags this process's broadcasts so it can ignore its own. */
  private readonly origin = randomBytes(8).toString("hex");

  private constructor(
    private readonly pool: pg.Pool,
    private readonly snapshots: pg.Pool,
    private readonly locks: pg.Pool,
    private readonly listener: pg.Client,
    private readonly table: string,
  ) {
    listener.on("notification", (notification) => {
      const payload = notification.payload ?? "";
      const split = payload.indexOf("|");
      if (split < 0 || payload.slice(0, split) === this.origin) return;
      const message = payload.slice(split + 1);
      for (const handler of [...this.handlers]) handler(message);
    });
  }

  /** Connects to `url` (`postgres://...`), creating the table when missing. */
  static async open(url: string, options: { table?: string } = {}): Promise<PostgresKv> {
    const table = options.table ?? "platform_kv";
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) throw new Error(`Invalid table name ${table}.`);
    const pool = new pg.Pool({ connectionString: url, max: DIRECT_CONNECTIONS });
    const snapshots = new pg.Pool({ connectionString: url, max: SNAPSHOT_CONNECTIONS });
    const locks = new pg.Pool({ connectionString: url, max: LOCK_CONNECTIONS });
    // Idle clients can die when the server restarts; the pool replaces them.
    for (const each of [pool, snapshots, locks]) each.on("error", () => {});
    for (const ddl of [
      `CREATE TABLE IF NOT EXISTS ${table} (key bytea PRIMARY KEY, value text NOT NULL)`,
      `CREATE TABLE IF NOT EXISTS ${table}_locks (name text PRIMARY KEY)`,
    ]) {
      try {
        await pool.query(ddl);
      } catch (error) {
        // Two hosts starting at once may race to create it; the loser sees it exists.
        const code = (error as { code?: string }).code;
        if (code !== "23505" && code !== "42P07") throw error;
      }
    }
    const listener = new pg.Client({ connectionString: url });
    listener.on("error", () => {});
    await listener.connect();
    await listener.query(`LISTEN ${CHANNEL}`);
    return new PostgresKv(pool, snapshots, locks, listener, table);
  }

  async get(key: Buffer): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ value: string }>(
      `SELECT value FROM ${this.table} WHERE key = $1`,
      [key],
    );
    return rows[0]?.value;
  }

  async getMany(keys: Buffer[]): Promise<Array<string | undefined>> {
    if (keys.length === 0) return [];
    const { rows } = await this.pool.query<{ key: Buffer; value: string }>(
      `SELECT key, value FROM ${this.table} WHERE key = ANY($1::bytea[])`,
      [keys],
    );
    const found = new Map(rows.map((row) => [row.key.toString("hex"), row.value]));
    return keys.map((key) => found.get(key.toString("hex")));
  }

  iterate(options: KvIterateOptions): KvIterator {
    return iterate(async () => this.pool, this.table, options);
  }

  async snapshot(): Promise<KvSnapshot> {
    const client = await this.snapshots.connect();
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      // The snapshot is taken by the first statement: take it now, not at the first read.
      await client.query("SELECT 1");
    } catch (error) {
      client.release(true);
      throw error;
    }
    return new PostgresSnapshot(client, this.table);
  }

  async batch(operations: KvOperation[]): Promise<void> {
    if (operations.length === 0) return;
    await writeAndRelease(await this.pool.connect(), this.table, operations);
  }

  async commit(snapshot: KvSnapshot, operations: KvOperation[]): Promise<void> {
    if (!(snapshot instanceof PostgresSnapshot)) throw new Error("Not a snapshot of this store.");
    await snapshot.commit(operations);
  }

  async clear(range: KvRange): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE key >= $1 AND key < $2`, [range.gte, range.lt]);
  }

  /**
   * A row lock (`SELECT ... FOR UPDATE` on the lock's row) held in an open transaction on a
   * connection of the lock pool while `work` runs: plain SQL, released by commit, or by the server
   * when the holding process dies and its connection closes.
   */
  async lockAcrossProcesses<T>(name: string, work: () => Promise<T>): Promise<T> {
    const client = await this.locks.connect();
    let broken = false;
    try {
      await client.query(`INSERT INTO ${this.table}_locks (name) VALUES ($1) ON CONFLICT DO NOTHING`, [name]);
      await client.query("BEGIN");
      await client.query(`SELECT name FROM ${this.table}_locks WHERE name = $1 FOR UPDATE`, [name]);
      return await work();
    } finally {
      await client.query("COMMIT").catch(() => {
        broken = true;
      });
      client.release(broken);
    }
  }

  async broadcast(message: string): Promise<void> {
    await this.pool.query("SELECT pg_notify($1, $2)", [CHANNEL, `${this.origin}|${message}`]);
  }

  onBroadcast(handler: (message: string) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async close(): Promise<void> {
    await this.listener.end().catch(() => {});
    await Promise.all([this.pool.end(), this.snapshots.end(), this.locks.end()]);
  }
}

/** One REPEATABLE READ READ ONLY transaction on its own connection. */
class PostgresSnapshot implements KvSnapshot {
  private open = true;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly table: string,
  ) {}

  private require(): pg.PoolClient {
    if (!this.open) throw new Error("This snapshot is closed.");
    return this.client;
  }

  async get(key: Buffer): Promise<string | undefined> {
    const { rows } = await this.require().query<{ value: string }>(
      `SELECT value FROM ${this.table} WHERE key = $1`,
      [key],
    );
    return rows[0]?.value;
  }

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
