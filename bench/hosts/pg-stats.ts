/**
 * Statements PostgreSQL executed, from `pg_stat_statements` (loaded by bench/hosts' private server):
 * BEGIN, COMMIT and ROLLBACK included, one per statement even when several travel in one message,
 * so an upper bound on round trips. It is read before and after each run. (`pg_stat_database`'s
 * transaction counters are not used: a backend flushes them up to 10 s late.)
 */
import pg from "pg";

/** A connection that reads the count; its own statements are left out. */
export async function pgStatements(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  return {
    read: async (): Promise<number> => {
      const result = await client.query<{ n: string }>(
        "SELECT coalesce(sum(calls), 0)::text AS n FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%'",
      );
      return Number(result.rows[0]?.n ?? 0);
    },
    close: () => client.end(),
  };
}
