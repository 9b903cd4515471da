import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DatabaseQuota,
  HostDatabase,
  type QueryOutcome,
  type RunOptions,
  type TenantDatabase,
  type Transaction,
} from "../../host/db/index.js";
import { createDatabaseApi, type DatabaseExecutor } from "../../runtime/database.js";
import type { Capsule, DatabaseReader, DatabaseWriter, SchemaDefinition } from "../../sdk/server/index.js";

/** A temporary on-disk database, removed by `dispose()`; `quota` as `HostDatabase.open` takes it. */
export async function tempDatabase(quota?: Partial<DatabaseQuota>): Promise<{
  db: HostDatabase;
  dir: string;
  dispose: () => Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), "platform-db-"));
  const db = await HostDatabase.open(dir, quota);
  return {
    db,
    dir,
    dispose: async () => {
      await db.close().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function unwrap(outcome: QueryOutcome): unknown {
  switch (outcome.kind) {
    case "rows":
      return outcome.rows.map((row) => JSON.parse(row));
    case "row":
      return outcome.row === null ? null : JSON.parse(outcome.row);
    case "count":
      return outcome.count;
    case "page":
      return {
        page: outcome.page.map((row) => JSON.parse(row)),
        isDone: outcome.isDone,
        continueCursor: outcome.continueCursor,
      };
  }
}

/** Runs `ctx.db` calls straight against a transaction, as the isolate bridge will. */
export function transactionExecutor(tx: Transaction): DatabaseExecutor {
  return {
    get: async (table, id) => {
      const row = await tx.get(table, id);
      return row === null ? null : JSON.parse(row);
    },
    query: async (spec, terminal) => unwrap(await tx.query(spec, terminal)),
    insert: async (table, row) => tx.insert(table, row),
    update: async (table, id, patch) => tx.update(table, id, patch),
    delete: async (table, id) => tx.delete(table, id),
  };
}

/** A typed `ctx.db` pair for one deployment of a capsule's schema. */
export function typedDb<S extends SchemaDefinition>(deployment: TenantDatabase, capsule: Capsule<S>) {
  const tables = Object.keys(capsule.declaration.schema.tables);
  return {
    read<T>(work: (db: DatabaseReader<S>) => Promise<T>, options?: RunOptions) {
      return deployment.query(
        (tx) => work(createDatabaseApi(tables, transactionExecutor(tx)) as unknown as DatabaseReader<S>),
        options,
      );
    },
    write<T>(work: (db: DatabaseWriter<S>) => Promise<T>, options?: RunOptions) {
      return deployment.mutate(
        (tx) => work(createDatabaseApi(tables, transactionExecutor(tx)) as unknown as DatabaseWriter<S>),
        options,
      );
    },
  };
}
