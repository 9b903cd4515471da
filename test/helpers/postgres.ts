/**
 * A private PostgreSQL server for one test file (scripts/local-postgres.ts): started before its
 * tests, stopped after them. Where PostgreSQL is not installed the file's tests are skipped
 * (`describe.skipIf(!postgresInstalled)`), with a warning saying so.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
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
  };
}

/** A table name no other store of the server uses: each test's store starts empty. */
export function freshTable(): string {
  return `kv_${randomBytes(6).toString("hex")}`;
}
