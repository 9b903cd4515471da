import type pg from "pg";
import { runReads } from "./postgres-prepared.js";
import { readOnly } from "./postgres-silence.js";
import type { RunSql, Statement } from "./postgres-sql.js";

/** A statement waiting to go to the server with the others asked for in the same tick. */
interface QueuedStatement {
  statement: Statement;
  resolve: (rows: pg.QueryResultRow[]) => void;
  reject: (error: unknown) => void;
}

/** The transaction that {@link TickReads} sends its reads in (a `PostgresSnapshot`). */
export interface ReadTransaction {
  /** Throws once the transaction is closed or committed: nothing more may go to it. */
  require(): void;
  /** Its connection, once it has begun; undefined before. */
  connection(): Promise<pg.PoolClient> | undefined;
  /**
   * Begins it with `first` in the same round trip and answers their rows; undefined when they
   * cannot go as one message (they are then sent one by one, with parameters).
   */
  start(first: Statement[]): Promise<pg.QueryResultRow[][] | undefined>;
}

/**
 * A snapshot's reads, gathered per tick: those asked for in the same tick (by one handler, or by
 * the handlers sharing one snapshot) go to the server as one message, with the transaction's
 * BEGIN when it has not begun. Round trips are what a PostgreSQL reader waits for.
 */
export class TickReads {
  private queued: QueuedStatement[] | undefined;
  /** Batches sent and not yet answered (a handler may leave a read unawaited): see {@link settled}. */
  private readonly flushing = new Set<Promise<void>>();

  constructor(private readonly transaction: ReadTransaction) {}

  /**
   * Runs a read in the transaction. Reads asked for in the same tick wait for its end (two
   * microtasks, so point reads merged per tick join them) and go as one message.
   */
  readonly run: RunSql = <R extends pg.QueryResultRow>(sql: string, params: unknown[]) => {
    this.transaction.require();
    return new Promise<R[]>((resolve, reject) => {
      const entry = { statement: { text: sql, values: params }, resolve, reject } as QueuedStatement;
      if (this.queued) this.queued.push(entry);
      else {
        this.queued = [entry];
        queueMicrotask(() =>
          queueMicrotask(() => {
            const flushed = this.flush();
            this.flushing.add(flushed);
            void flushed.finally(() => this.flushing.delete(flushed));
          }),
        );
      }
    });
  };

  /** Resolves once every batch sent so far has its answer: the connection's next message is the caller's. */
  async settled(): Promise<void> {
    while (this.flushing.size > 0) await Promise.all([...this.flushing]);
  }

  private async flush(): Promise<void> {
    const batch = this.queued ?? [];
    this.queued = undefined;
    const transaction = this.transaction;
    let answered = 0;
    try {
      // Closed (or committed) since they were asked for: never begin a transaction nobody ends.
      transaction.require();
      const statements = batch.map((entry) => entry.statement);
      let results: pg.QueryResultRow[][] | undefined;
      const ready = transaction.connection();
      if (ready === undefined) results = await transaction.start(statements);
      else {
        const client = await ready;
        transaction.require();
        results = await runReads(client, [], statements);
      }
      if (results) {
        for (const [i, entry] of batch.entries()) entry.resolve(results[i] ?? []);
        answered = batch.length;
        return;
      }
      const client = await (transaction.connection() as Promise<pg.PoolClient>);
      for (const entry of batch) {
        transaction.require();
        entry.resolve((await client.query(readOnly(entry.statement.text, entry.statement.values))).rows);
        answered++;
      }
    } catch (error) {
      for (const entry of batch.slice(answered)) entry.reject(error);
    }
  }
}
