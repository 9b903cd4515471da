/**
 * A private PostgreSQL server for one test file (scripts/local-postgres.ts): started before its
 * tests, stopped after them. Where PostgreSQL is not installed the file's tests are skipped
 * (`describe.skipIf(!postgresInstalled)`), with a warning saying so.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { serverKeepaliveSql } from "../../host/db/kv/postgres-keepalive.js";
import { advisoryKey } from "../../host/db/kv/postgres-locks.js";
import { type LocalPostgres, postgresBinDir, startLocalPostgres } from "../../scripts/local-postgres.js";

/** True where a PostgreSQL server can be started here. */
export const postgresInstalled = postgresBinDir() !== undefined;

/**
 * Starts the file's server before its tests and stops it after them; the server (its `url`) once
 * started. `what` names the tests the warning says are skipped.
 */
export function postgresForThisFile(what: string): LocalPostgres {
  if (!postgresInstalled)
    console.warn(
      `${what} skipped: PostgreSQL is not installed and could not be installed (apt-get install postgresql).`,
    );
  let server: LocalPostgres | undefined;
  beforeAll(async () => {
    if (postgresInstalled) server = await startLocalPostgres();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });
  const started = (): LocalPostgres => {
    if (!server) throw new Error("The PostgreSQL server is not started: use it inside a test.");
    return server;
  };
  return {
    get url() {
      return started().url;
    },
    stop: () => started().stop(),
    suspend: () => started().suspend(),
    resume: () => started().resume(),
    freeze: () => started().freeze(),
    thaw: () => started().thaw(),
  };
}

/**
 * Ends the backend holding lock `name` of `table`'s store on `server`, as an administrator would
 * (`pg_terminate_backend`): the lock is let go of while its holder still works.
 */
export async function endLockBackend(server: { url: string }, table: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    const { rows } = await admin.query(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE $1",
      [`%${advisoryKey(table, name)}::bigint%`],
    );
    if (rows.length !== 1 || rows[0].ended !== true)
      throw new Error(`Expected one backend holding lock ${name}, ended; found ${JSON.stringify(rows)}.`);
  } finally {
    await admin.end();
  }
}

/** A table name no other store of the server uses: each test's store starts empty. */
export function freshTable(): string {
  return `kv_${randomBytes(6).toString("hex")}`;
}

/** A statement a connection sent: its text and, when it has any, its parameters. */
export interface SentQuery {
  text: string;
  values: unknown[] | undefined;
  /** The connection that sent it. */
  client: pg.Client;
}

/**
 * Records every statement any connection sends until `stop` is called: `sent` has the texts,
 * `queries` the texts with their parameters (the messages the driver puts on the wire). A new
 * connection's set-up (the server's keepalive: host/db/kv/postgres-keepalive.ts) is left out
 * unless `setUp` is true: the statements a test counts are the ones its reads and writes make.
 */
export function recordQueries(options: { setUp?: boolean } = {}): {
  sent: string[];
  queries: SentQuery[];
  stop: () => void;
} {
  const query = pg.Client.prototype.query;
  const sent: string[] = [];
  const queries: SentQuery[] = [];
  const setUp = serverKeepaliveSql();
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (args[0] === setUp && options.setUp !== true) {
      // Not recorded.
    } else if (typeof args[0] === "string") {
      sent.push(args[0]);
      queries.push({ text: args[0], values: Array.isArray(args[1]) ? args[1] : undefined, client: this });
    } else if (typeof (args[0] as { text?: unknown } | undefined)?.text === "string") {
      // A statement given as a config object (a read: see host/db/kv/postgres-silence.ts).
      const config = args[0] as { text: string; values?: unknown[] };
      sent.push(config.text);
      queries.push({ text: config.text, values: config.values, client: this });
    }
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return {
    sent,
    queries,
    stop: () => {
      pg.Client.prototype.query = query;
    },
  };
}
