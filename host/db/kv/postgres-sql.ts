import type pg from "pg";
import { LIMITS } from "../../../sdk/protocol/index.js";
import { foldBatch } from "./batch-fold.js";
import { type KvIterateOptions, type KvIterator, type KvOperation, NO_KEY } from "./kv.js";
import { readOnly } from "./postgres-silence.js";

/** Runs one statement with `$n` parameters and returns its rows. */
export type RunSql = <R extends pg.QueryResultRow>(sql: string, params: unknown[]) => Promise<R[]>;

/** A statement and its parameters. */
export interface Statement {
  text: string;
  values: unknown[];
}

/** The channel of every broadcast (LISTEN/NOTIFY). */
export const CHANNEL = "platform";

/**
 * The value bytes one scan batch brings at most (and at least one entry): a handler cannot read
 * more than its bytesRead budget, and a batch of 1,000 rows of a few MB each would otherwise be
 * held in the host whole (classic-level's batches stop at the same size).
 */
const BATCH_BYTES = LIMITS.bytesRead;

/**
 * Largest statement (bytes of values) sent with its values written into its text, in one message
 * with others (see {@link inline}); larger writes go as chunks of it (postgres-write.ts).
 */
export const INLINE_BYTES = 1024 * 1024;

/**
 * `text` as an SQL string literal, as `pg.escapeLiteral` writes it (quotes doubled; with a
 * backslash, an `E'...'` literal with backslashes doubled too) but with two native replaces instead
 * of a loop that appends one character at a time: every value a group commit writes goes through
 * it, and on a row of JSON the loop cost about ten times as much.
 */
export function quoteText(text: string): string {
  const quoted = text.replace(/'/g, "''");
  return text.includes("\\") ? ` E'${quoted.replace(/\\/g, "\\\\")}'` : `'${quoted}'`;
}

/** A parameter as SQL text: keys as hex (safe whatever the server's string settings), text escaped. */
function literal(value: unknown): string {
  if (Buffer.isBuffer(value)) return `decode('${value.toString("hex")}','hex')`;
  if (typeof value === "string") return quoteText(value);
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (Array.isArray(value)) {
    const type = Buffer.isBuffer(value[0]) ? "bytea" : "text";
    return `ARRAY[${value.map(literal).join(",")}]::${type}[]`;
  }
  throw new Error(`No SQL literal for ${typeof value}.`);
}

/**
 * `statement` with its parameters written into its text, for the simple query protocol, which
 * runs several statements in ONE round trip (a transaction's BEGIN with its first read, a
 * snapshot's end with the writes it commits). Undefined when its values take more than `most`
 * bytes: too large to go in one message with others.
 */
export function inline(statement: Statement, most = INLINE_BYTES): string | undefined {
  let bytes = 0;
  const count = (value: unknown): void => {
    if (Array.isArray(value)) for (const each of value) count(each);
    else if (typeof value === "string") bytes += value.length;
    else if (typeof value === "number") bytes += String(value).length;
    else bytes += (value as Buffer).length * 2;
  };
  for (const value of statement.values) count(value);
  if (bytes > most) return undefined;
  return statement.text.replace(/\$(\d+)/g, (_, n: string) => literal(statement.values[Number(n) - 1]));
}

/**
 * The ONE statement that writes `operations` (folded as batch-fold.ts says: one operation per key)
 * and sends each payload of `notify` on {@link CHANNEL} when the write commits. An add reads its
 * count in the statement itself: no round trip before it. A single statement is atomic on its
 * own; undefined when there is nothing to send. `guards` (a lock fence's, postgres-fence.ts),
 * expressions that fail the statement when the write must not land, are its result's first columns.
 */
export function writeStatement(
  table: string,
  operations: KvOperation[],
  notify?: string | readonly string[],
  guards: readonly string[] = [],
): Statement | undefined {
  const puts: Buffer[] = [];
  const values: string[] = [];
  const dels: Buffer[] = [];
  const adds: Buffer[] = [];
  const deltas: string[] = [];
  for (const op of foldBatch(operations)) {
    if (op.type === "put") {
      puts.push(op.key);
      values.push(op.value);
    } else if (op.type === "add") {
      adds.push(op.key);
      deltas.push(String(op.delta));
    } else dels.push(op.key);
  }
  const params: unknown[] = [];
  const param = (value: unknown) => `$${params.push(value)}`;
  // Each key has one operation, so the order of the parts within the statement does not matter
  // (they all read the table as it was before the statement).
  const parts: string[] = [];
  if (dels.length > 0) parts.push(`gone AS (DELETE FROM ${table} WHERE key = ANY(${param(dels)}::bytea[]))`);
  if (puts.length > 0)
    parts.push(
      `put AS (INSERT INTO ${table} (key, value) SELECT * FROM unnest(${param(puts)}::bytea[], ${param(values)}::text[]) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value)`,
    );
  if (adds.length > 0)
    parts.push(
      `moved AS (SELECT m.key, COALESCE(t.value::bigint, 0) + m.delta::bigint AS n FROM unnest(${param(adds)}::bytea[], ${param(deltas)}::text[]) AS m(key, delta) LEFT JOIN ${table} t ON t.key = m.key)`,
      `counted AS (INSERT INTO ${table} (key, value) SELECT key, n::text FROM moved WHERE n > 0 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value)`,
      `uncounted AS (DELETE FROM ${table} WHERE key IN (SELECT key FROM moved WHERE n <= 0))`,
    );
  const payloads = notify === undefined ? [] : typeof notify === "string" ? [notify] : notify;
  if (parts.length === 0 && payloads.length === 0) return undefined;
  const channel = payloads.length > 0 ? param(CHANNEL) : "";
  const columns = payloads.map((payload) => `pg_notify(${channel}, ${param(payload)})`);
  const selected = [...guards, ...columns];
  const tail = `SELECT ${selected.length > 0 ? selected.join(", ") : "1"}`;
  return { text: parts.length > 0 ? `WITH ${parts.join(", ")} ${tail}` : tail, values: params };
}

/** Runs statements on a pool or a connection (for reads outside snapshots). */
export function runOn(client: Pick<pg.Pool, "query">): RunSql {
  return async (sql, params) => (await client.query(readOnly(sql, params))).rows;
}

/** Joins a keyless batch's values in one text (see {@link iterate}); no stored row holds one raw. */
const JOINER = "\n";

/**
 * Walks a range with keyset pagination: each batch is one ordered, bounded SELECT starting after
 * the last key seen. On a snapshot's connection every batch sees the same snapshot. A scan of
 * values without keys gets each batch as ONE row (the values joined, their count, the last key):
 * parsing a row per entry, and its key, cost the host more than the rest of the read. Should a value
 * hold the joiner, the count tells, and that batch is read again row by row.
 */
export function iterate(run: RunSql, table: string, options: KvIterateOptions): KvIterator {
  const reverse = options.reverse === true;
  const order = reverse ? "DESC" : "ASC";
  const values = options.values !== false;
  const joined = values && options.keys === false;
  let last: Buffer | undefined;
  let left = options.limit ?? Number.POSITIVE_INFINITY;
  let done = false;
  // The next `n` entries; with values, as far as their first BATCH_BYTES go (one entry at least).
  // The count is a parameter, so that a scan's statements are few texts (see postgres-prepared.ts).
  const batch = (n: number, columns: string) => {
    const bound = last === undefined ? "" : reverse ? " AND key < $4" : " AND key > $4";
    const limited = `SELECT ${columns} FROM ${table} WHERE key >= $1 AND key < $2${bound} ORDER BY key ${order} LIMIT $3`;
    const sql = values
      ? `SELECT ${columns} FROM (SELECT key, value, sum(octet_length(value)) OVER (ORDER BY key ${order} ROWS UNBOUNDED PRECEDING) - octet_length(value) AS before FROM (${limited}) AS limited) AS sized WHERE before < ${BATCH_BYTES} ORDER BY key ${order}`
      : limited;
    const params: unknown[] = [options.gte, options.lt, n];
    if (last !== undefined) params.push(last);
    return { sql, params };
  };
  const rowByRow = async (n: number): Promise<Array<[Buffer, string]>> => {
    const { sql, params } = batch(n, `key${values ? ", value" : ""}`);
    const rows = await run<{ key: Buffer; value?: string }>(sql, params);
    const tail = rows.at(-1);
    if (tail) last = tail.key;
    return rows.map((row) => [row.key, row.value ?? ""]);
  };
  const inOneRow = async (n: number): Promise<Array<[Buffer, string]>> => {
    const { sql, params } = batch(n, "key, value");
    // The last key without sorting again: hex compared bytewise ("C") orders as the keys do.
    const [row] = await run<{ joined: string | null; n: number; last: string | null }>(
      `SELECT string_agg(value, E'\\n' ORDER BY key ${order}) AS joined, count(*)::int AS n, ${reverse ? "min" : "max"}(encode(key, 'hex') COLLATE "C") AS last FROM (${sql}) AS batch`,
      params,
    );
    if (!row || row.n === 0 || row.joined === null || row.last === null) return [];
    const parts = row.joined.split(JOINER);
    if (parts.length !== row.n) return rowByRow(n);
    last = Buffer.from(row.last, "hex");
    return parts.map((value) => [NO_KEY, value]);
  };
  return {
    next: async (max) => {
      if (done || left <= 0) return [];
      const n = Math.min(max, left);
      const entries = await (joined ? inOneRow(n) : rowByRow(n));
      // Fewer than asked: the range ended, unless the batch's bytes may have cut it short (a
      // character is 3 UTF-8 bytes at most); then the next batch tells.
      if (entries.length < n && (!values || 3 * textLength(entries) < BATCH_BYTES)) done = true;
      left -= entries.length;
      return entries;
    },
    close: async () => {
      done = true;
    },
  };
}

/** The characters of the entries' values together. */
function textLength(entries: Array<[Buffer, string]>): number {
  let length = 0;
  for (const [, value] of entries) length += value.length;
  return length;
}

/** The value of `key`, by one point query. */
export async function selectValue(run: RunSql, table: string, key: Buffer): Promise<string | undefined> {
  const rows = await run<{ value: string }>(`SELECT value FROM ${table} WHERE key = $1`, [key]);
  return rows[0]?.value;
}

/** The statement that reads the values of `keys` in one query (rows for {@link valuesInOrder}). */
export function valuesStatement(table: string, keys: Buffer[]): Statement {
  return { text: `SELECT key, value FROM ${table} WHERE key = ANY($1::bytea[])`, values: [keys] };
}

/** The rows of {@link valuesStatement} as the values of `keys`, in their order. */
export function valuesInOrder(
  keys: Buffer[],
  rows: Array<{ key: Buffer; value: string }>,
): Array<string | undefined> {
  const found = new Map(rows.map((row) => [row.key.toString("hex"), row.value]));
  return keys.map((key) => found.get(key.toString("hex")));
}

/** The values of `keys`, in their order, by one query. */
export async function selectValues(
  run: RunSql,
  table: string,
  keys: Buffer[],
): Promise<Array<string | undefined>> {
  const { text, values } = valuesStatement(table, keys);
  return valuesInOrder(keys, await run<{ key: Buffer; value: string }>(text, values));
}
