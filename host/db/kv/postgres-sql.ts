import type pg from "pg";
import type { KvIterateOptions, KvIterator, KvOperation } from "./kv.js";

/** A connection or a pool: anything that runs a query. */
export type Queryable = Pick<pg.PoolClient, "query">;

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
export async function writeAndRelease(
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
export function iterate(
  client: () => Promise<Queryable>,
  table: string,
  options: KvIterateOptions,
): KvIterator {
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

/** The value of `key`, by one point query. */
export async function selectValue(
  client: Queryable,
  table: string,
  key: Buffer,
): Promise<string | undefined> {
  const { rows } = await client.query<{ value: string }>(`SELECT value FROM ${table} WHERE key = $1`, [key]);
  return rows[0]?.value;
}
