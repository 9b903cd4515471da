import type { RowsAnswer, RowsQuery, TablesAnswer } from "../../sdk/protocol/index.js";
import { type FieldValue, PlatformError } from "../../sdk/values/index.js";
import {
  browseRows,
  DASHBOARD_HANDLER,
  describeTables,
  type HostDatabase,
  readRow,
  type Transaction,
  totalRows,
} from "../db/index.js";
import type { LogHub } from "./log-hub.js";
import { formatRequestId } from "./log-line.js";
import type { DeploymentRecord } from "./records.js";
import type { StillAllowed } from "./removal.js";

type Row = Record<string, FieldValue>;

/** Who changes rows from the dashboard, as the deployment's log names them. */
export interface DataActor {
  /** `developer <id>` or `operator`. */
  label: string;
  /** Asked once the change holds the deployment's write lock, before it is made (see `StillAllowed`). */
  stillAllowed?: StillAllowed;
}

/** One change made from the dashboard, as its log line's fields record it (no row values). */
type DataChange = {
  action: "insert" | "update" | "delete";
  table: string;
  id: string;
  fields?: string[];
};

const PAST = { insert: "inserted", update: "updated", delete: "deleted" } as const;

/**
 * The owner's console over a deployment's rows (the dashboard's data browser and its `/v1` routes):
 * reads through the query engine on snapshots, and inserts, edits and deletes as a mutation does
 * them (one transaction under the deployment's write lock, schema validation, defaults, `id()`
 * references, stored counts, live queries told), each recorded in the deployment's log as the
 * developer's action. Access is decided by the caller (host/access) before any of these runs.
 */
export class DataConsole {
  private seq = 0;

  constructor(
    private readonly db: HostDatabase,
    private readonly logs: LogHub,
  ) {}

  /** The tables of `record` with their fields, indexes and sizes. */
  async tables(record: DeploymentRecord, writable: boolean): Promise<TablesAnswer> {
    const database = await this.db.deployment(record.id);
    return {
      deployment: record.id,
      apiVersion: database.legacy ? "legacy" : "v1",
      writable: writable && !database.legacy,
      tables: await describeTables(database, record.incarnation ?? null),
    };
  }

  /** Rows over every table of `record` (null when a size is only known as a lower bound). */
  async totalRows(record: DeploymentRecord): Promise<number | null> {
    return totalRows(await this.db.deployment(record.id), record.incarnation ?? null);
  }

  /** One page of `table`'s rows for `query`. */
  async rows(record: DeploymentRecord, table: string, query: RowsQuery): Promise<RowsAnswer> {
    return browseRows(await this.db.deployment(record.id), table, query, record.incarnation ?? null);
  }

  /** Row `id` of `table`, or `not_found`. */
  async row(record: DeploymentRecord, table: string, id: string): Promise<Row> {
    const found = await readRow(await this.db.deployment(record.id), table, id, record.incarnation ?? null);
    if (!found) throw new PlatformError("not_found", `No row ${id} in table ${table}.`);
    return found;
  }

  /** Inserts `input` into `table` as `insert()` would (defaults, validation); returns the stored row. */
  insert(record: DeploymentRecord, table: string, input: unknown, actor: DataActor): Promise<Row> {
    return this.write(record, actor, async (tx) => {
      const id = await tx.insert(table, input);
      return { change: { action: "insert", table, id }, row: await this.stored(tx, table, id) };
    });
  }

  /** Applies `patch` to row `id` as `update()` would (`null` clears); returns the stored row. */
  update(
    record: DeploymentRecord,
    table: string,
    id: string,
    patch: unknown,
    actor: DataActor,
  ): Promise<Row> {
    return this.write(record, actor, async (tx) => {
      await tx.update(table, id, patch);
      const fields = typeof patch === "object" && patch !== null ? Object.keys(patch) : [];
      return { change: { action: "update", table, id, fields }, row: await this.stored(tx, table, id) };
    });
  }

  /** Deletes row `id` of `table` (`not_found` when there is none). */
  async remove(record: DeploymentRecord, table: string, id: string, actor: DataActor): Promise<void> {
    await this.write(record, actor, async (tx) => {
      await tx.delete(table, id);
      return { change: { action: "delete", table, id }, row: undefined };
    });
  }

  private async stored(tx: Transaction, table: string, id: string): Promise<Row> {
    return JSON.parse((await tx.get(table, id)) as string) as Row;
  }

  /**
   * Runs one dashboard change as a mutation of `record` (refused on a legacy deployment, whose rows
   * belong to the snapshot runtime's format), then writes its log line.
   */
  private async write<T>(
    record: DeploymentRecord,
    actor: DataActor,
    work: (tx: Transaction) => Promise<{ change: DataChange; row: T }>,
  ): Promise<T> {
    const database = await this.db.deployment(record.id);
    if (database.legacy)
      throw new PlatformError(
        "bad_request",
        `${record.id} uses the legacy database API (v0): its rows are read-only in the dashboard.`,
      );
    const { value } = await database.mutate(
      async (tx) => {
        await actor.stillAllowed?.();
        return work(tx);
      },
      // The data of the incarnation the caller was allowed for only (host/db/incarnation.ts).
      { handler: DASHBOARD_HANDLER, now: Date.now(), incarnation: record.incarnation ?? null },
    );
    const { change } = value;
    this.logs.write({
      time: new Date().toISOString(),
      level: "info",
      deployment: record.id,
      handler: "dashboard",
      platform: true,
      requestId: formatRequestId(Date.now(), ++this.seq),
      message: `dashboard: ${actor.label} ${PAST[change.action]} ${change.table} row ${change.id}`,
      fields: Object.assign({ by: actor.label }, change),
    });
    return value.row;
  }
}
