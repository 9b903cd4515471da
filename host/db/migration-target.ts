/**
 * What a migration (backfill.ts) works on and hands back: its deployment, what switches with the
 * schema, and what is left once it switched.
 */
import type { HostMessage } from "./host-message.js";
import type { FencedWork, KvOperation, KvStore, LockFence } from "./kv/index.js";
import type { MigrationReport } from "./migrate.js";
import type { RowBytesTotal } from "./row-bytes-total.js";
import type { CompiledTable, StoredSchema } from "./stored-schema.js";

/** What running a migration needs of its deployment. */
export interface MigrationTarget {
  readonly store: KvStore;
  readonly id: string;
  /** Whose share of the store's connections its work uses (`HostDatabase.shareOf`). */
  share(): string;
  readonly schema: StoredSchema;
  /** Serves `next` from now on (called once it is stored with `tag`). */
  adoptSchema(next: StoredSchema, tag: string): void;
  /** Its data belongs to `incarnation` from now on (called once it is stored: see incarnation.ts). */
  adoptIncarnation(incarnation: string | null | undefined): void;
  /** The schema served now, compiled. */
  readonly tables: ReadonlyMap<string, CompiledTable>;
  /** Resolves once the queries that began on the schema served as `tables` have ended. */
  readersEnded(tables: ReadonlyMap<string, CompiledTable>): Promise<void>;
  /** The schema served as `tables` is gone: a query still reading through it fails, to retry. */
  retire(tables: ReadonlyMap<string, CompiledTable>): void;
  /** The deployment's row bytes (row-bytes-total.ts). */
  readonly rowBytes: RowBytesTotal;
  /** The deployment's row bytes now (counted and stored first if not known). */
  storedRowBytes(fence?: LockFence): Promise<number>;
  /** Runs `work` holding the deployment's write lock, in this process and across processes. */
  exclusive<T>(work: FencedWork<T>): Promise<T>;
}

/**
 * What switches with the schema: `operations` are written in the batch that stores it (a
 * deployment's record naming the code that reads it), and `switched` runs at once after (the code
 * starts serving), so neither serves without the other, before or after a crash. `announce` is
 * sent to the other hosts in that batch, with the schema's own announcement.
 */
export interface SchemaSwitch {
  operations: KvOperation[];
  announce?: HostMessage[];
  /**
   * The incarnation of the deployment whose code switches (its record's): the data is marked as
   * its in the same batch, so that another incarnation's code is refused it (incarnation.ts).
   */
  incarnation?: string | null | undefined;
  /**
   * The fence of the lock `operations` were prepared under, if not the write lock's (a deploy's
   * record, built from the previous one read under the deployment's lifecycle lock): the switch
   * lands only while that lock is held too.
   */
  fence?: LockFence | undefined;
  switched(): void;
}

/** A migration switched, and what is left of it: clearing the indexes it dropped. */
export interface Migrated {
  report: MigrationReport;
  /**
   * Clears the dropped indexes once the queries begun before the switch have ended (or their
   * handlers' wall time passed: those still reading are failed, to retry). Needs no lock: nothing
   * writes to a dropped index. The switch recorded them under `building`, so a crash before the
   * end leaves them for the next load to clear.
   */
  clearDropped(): Promise<void>;
}
