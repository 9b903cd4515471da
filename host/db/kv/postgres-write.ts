import { setImmediate as nextTurn } from "node:timers/promises";
import type pg from "pg";
import { foldBatch, foldInTurns, LARGE_BATCH } from "./batch-fold.js";
import type { KvOperation, KvRange } from "./kv.js";
import type { LockFence } from "./lock-fence.js";
import { fencedFailure } from "./postgres-fence.js";
import { INLINE_BYTES, inline, writeStatement } from "./postgres-sql.js";

/** About the bytes an operation takes in a statement's text (a key goes as hex). */
function operationBytes(op: KvOperation): number {
  return op.key.length * 2 + (op.type === "put" ? op.value.length : 16);
}

/**
 * `operations` folded (one per key) and cut into chunks of about {@link INLINE_BYTES} each; one
 * chunk (or none) when they fit in one statement. Answered at once, as the callers' order of
 * taking connections depends on, unless the batch is large: one of more than {@link LARGE_BATCH}
 * operations is folded over turns of the event loop.
 */
export function writeChunks(operations: KvOperation[]): KvOperation[][] | Promise<KvOperation[][]> {
  if (operations.length > LARGE_BATCH) return foldInTurns(operations).then(chunksOf);
  return chunksOf(foldBatch(operations));
}

/** Folded operations cut into chunks of about {@link INLINE_BYTES}. */
function chunksOf(folded: KvOperation[]): KvOperation[][] {
  const chunks: KvOperation[][] = [];
  let chunk: KvOperation[] = [];
  let bytes = 0;
  for (const op of folded) {
    const size = operationBytes(op);
    if (chunk.length > 0 && bytes + size > INLINE_BYTES) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(op);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * Writes `chunks` (a batch's {@link writeChunks}) on `client` after `end` (the open transaction's COMMIT or ROLLBACK, or ""),
 * sending `notify` when the write commits. A write that fits in one statement goes with `end` in
 * ONE message, its values written into the text; a larger one goes as chunks of text in a
 * transaction of its own, the event loop getting a turn between them. Large writes went as
 * parameters before, which the driver turns into array literals on the main thread: a 16 MiB
 * commit held every tenant's requests for over a second, and a 180 MiB import ran out of heap.
 * With `fence`, the write checks the fence's guard (postgres-fence.ts) in its statement, or first
 * in its transaction when in chunks, and a guard's refusal fails it as `lockLostError`.
 */
export async function runWrite(
  client: pg.ClientBase,
  table: string,
  chunks: KvOperation[][],
  notify: string | readonly string[] | undefined,
  end = "",
  fence?: LockFence,
): Promise<void> {
  try {
    await writeIn(client, table, chunks, notify, end, fence);
  } catch (error) {
    throw fence ? fencedFailure(error) : error;
  }
}

async function writeIn(
  client: pg.ClientBase,
  table: string,
  chunks: KvOperation[][],
  notify: string | readonly string[] | undefined,
  end: string,
  fence: LockFence | undefined,
): Promise<void> {
  if (chunks.length <= 1) {
    // One chunk: within INLINE_BYTES, or one value larger than that alone (an artifact's code).
    const write = writeStatement(table, chunks[0] ?? [], notify, fence?.guards);
    const message = [end, write && inline(write, Number.POSITIVE_INFINITY)].filter(Boolean).join("; ");
    if (message) await client.query(message);
    return;
  }
  if (end) await client.query(end);
  await client.query(fence ? `BEGIN; SELECT ${fence.guards.join(", ")}` : "BEGIN");
  for (const [i, chunk] of chunks.entries()) {
    // Defined: every chunk holds an operation. The broadcast goes with the last, at its commit.
    const write = writeStatement(table, chunk, i === chunks.length - 1 ? notify : undefined);
    const text = write && inline(write, Number.POSITIVE_INFINITY);
    if (text) await client.query(text);
    await nextTurn();
  }
  await client.query("COMMIT");
}

/**
 * Deletes every key of `range` in `table` (one statement); with `fence`, its guards are in the same
 * statement, and a refusal deletes nothing and fails as `lockLostError`.
 */
export async function runClear(
  pool: Pick<pg.Pool, "query">,
  table: string,
  range: KvRange,
  fence?: LockFence,
): Promise<void> {
  const clear = `DELETE FROM ${table} WHERE key >= $1 AND key < $2`;
  const text = fence ? `WITH gone AS (${clear}) SELECT ${fence.guards.join(", ")}` : clear;
  try {
    await pool.query(text, [range.gte, range.lt]);
  } catch (error) {
    throw fence ? fencedFailure(error) : error;
  }
}
