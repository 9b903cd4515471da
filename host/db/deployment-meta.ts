import { clearAbandonedBuilds } from "./backfill.js";
import { incarnationKey, replacedError, servesIncarnation } from "./incarnation.js";
import { metaKey } from "./keys.js";
import type { KvStore, LockFence } from "./kv/index.js";
import type { DatabaseQuota } from "./row-bytes.js";
import { RowBytesTotal } from "./row-bytes-total.js";
import { ServedSchema } from "./served-schema.js";
import type { CompiledTable, StoredSchema } from "./stored-schema.js";

/** 1/1024 ms: exactly representable at epoch-ms magnitudes, so successive createdAt stay distinct. */
const CLOCK_STEP = 1 / 1024;

/**
 * What a deployment's database holds in memory of its metadata records: the schema it serves
 * (served-schema.ts), its clock (each `createdAt` above the last) and its row bytes
 * (row-bytes-total.ts); read at load, and read again when another process sharing the store may
 * have moved them. `TenantDatabase` (tenant-database.ts) extends it with the work it runs.
 */
export class DeploymentMeta {
  readonly clockKey: Buffer;
  /** The row bytes this deployment stores, and the most it may (row-bytes-total.ts). */
  readonly rowBytes: RowBytesTotal;
  /** The schema served, and the queries open on each (a migration clears what it dropped once they end). */
  protected readonly served: ServedSchema;
  private lastCreatedAt = 0;
  /** Set once the deployment is deleted: a write still queued here must not recreate its keys. */
  protected dropped = false;
  /** The incarnation its data belongs to as last read (incarnation.ts); undefined: unmarked. */
  private stored: string | undefined;
  /**
   * The incarnation its data belongs to as read with the write lock, which every change of it
   * takes: what a mutation holding the lock checks (a read outside it may be overtaken).
   */
  protected held: string | undefined;

  constructor(
    readonly store: KvStore,
    readonly id: string,
    quota: DatabaseQuota,
    /** Whose share of the store's connections its work uses (`HostDatabase.shareOf`). */
    readonly share: () => string,
    /**
     * Told when its data turned out to belong to another incarnation than this host took it for:
     * the deployment was deleted and perhaps created again, unheard of here (see incarnation.ts).
     */
    protected readonly moved: () => void = () => {},
  ) {
    this.clockKey = metaKey(id, "clock");
    this.served = new ServedSchema(id);
    this.rowBytes = new RowBytesTotal(id, quota.rowBytesPerDeployment);
  }

  /**
   * The deployment's row bytes (rows and index entries), counted from what it holds and stored
   * first when not known yet. The caller holds the write lock.
   */
  storedRowBytes(fence?: LockFence): Promise<number> {
    return this.rowBytes.current(this.store, this.served.tables.values(), this.share(), fence);
  }

  /** Loads schema and clock; clears index entries a crashed migration left half-built. */
  async load(): Promise<this> {
    const [clock, rowBytes, pending, incarnation, tag, schema] = await this.store.getMany([
      this.clockKey,
      this.rowBytes.key,
      metaKey(this.id, "building"),
      incarnationKey(this.id),
      ...this.served.keys(true),
    ]);
    this.stored = this.held = incarnation;
    if (schema) this.served.adoptRecord(schema, tag);
    this.lastCreatedAt = clock ? Number(clock) : 0;
    this.rowBytes.read(rowBytes);
    // A build in progress elsewhere (another host) is not ours to clear.
    if (pending && !this.store.supports.sharedAcrossProcesses)
      await clearAbandonedBuilds(this.store, this.id, pending);
    return this;
  }

  /**
   * Re-reads the schema, the clock and the incarnation, which another process sharing the store may
   * have moved (called under the cross-process write lock, and, with `keys` naming the schema, when
   * another host announces a migration). `values`: the values of `keys` (from {@link refreshKeys}),
   * when already read. Returns the row bytes record and the incarnation read.
   */
  async refresh(
    keys = this.refreshKeys(),
    values?: Array<string | undefined>,
  ): Promise<{ rowBytes: string | undefined; incarnation: string | undefined }> {
    const read = values ?? (await this.store.getMany(keys));
    const [clock, rowBytes, incarnation, ...schema] = read;
    const moved = incarnation !== this.stored;
    this.stored = incarnation;
    // It had a schema and has none now: another host deleted the deployment.
    const gone = !(await this.served.update(this.store, schema));
    if (gone) this.dropped = true;
    this.lastCreatedAt = Math.max(this.lastCreatedAt, clock ? Number(clock) : 0);
    // This host may not have heard: its record of the deployment is read again.
    if (moved || gone) this.moved();
    return { rowBytes, incarnation };
  }

  /**
   * The keys {@link refresh} reads: the clock, the row bytes, the incarnation, then the schema's
   * tag, and the schema itself when `whole` or while its tag is not known.
   */
  refreshKeys(whole = false): Buffer[] {
    return [this.clockKey, this.rowBytes.key, incarnationKey(this.id), ...this.served.keys(whole)];
  }

  /**
   * Its data belongs to `incarnation` from now on: a deploy or an import holding the write lock
   * stored it (see `incarnationWrites`); null or undefined leaves the data as marked.
   */
  adoptIncarnation(incarnation: string | null | undefined): void {
    if (typeof incarnation === "string") this.stored = this.held = incarnation;
  }

  /**
   * Refuses (`not_found`) a mutation holding the write lock whose code belongs to incarnation
   * `expected` (undefined: the host's own work) when the data belongs to another (incarnation.ts).
   */
  requireIncarnation(expected: string | null | undefined): void {
    if (servesIncarnation(this.held, expected)) return;
    this.moved();
    throw replacedError(this.id);
  }

  /**
   * Moves the clock to `clock` (an import replacing everything: see data-replacement.ts); the
   * caller holds the write lock.
   */
  resetClock(clock: number): void {
    this.lastCreatedAt = clock;
  }

  /** The deployment was deleted: writes still queued here fail with `not_found`. */
  deleted(): void {
    this.dropped = true;
  }

  /** Its data was cleared (the caller holds the write lock): unmarked, as a new deployment's. */
  protected cleared(): void {
    this.dropped = true;
    this.stored = this.held = undefined;
  }

  /** Serves `stored` from now on; `tag`: the one it was stored with (see served-schema.ts). */
  adoptSchema(stored: StoredSchema, tag: string): void {
    this.served.adopt(stored, tag);
  }

  get schemaHash(): string {
    return this.served.schema.hash;
  }

  get tables(): ReadonlyMap<string, CompiledTable> {
    return this.served.tables;
  }

  /** The schema this deployment serves. */
  get schema(): StoredSchema {
    return this.served.schema;
  }

  /** True while the deployment serves a legacy (database API v0) schema. */
  get legacy(): boolean {
    return this.served.schema.legacy === true;
  }

  nextCreatedAt(now: number): number {
    this.lastCreatedAt = Math.max(now, this.lastCreatedAt + CLOCK_STEP);
    return this.lastCreatedAt;
  }

  clockValue(): number {
    return this.lastCreatedAt;
  }

  /** See {@link ServedSchema.readersEnded}. */
  readersEnded(tables: ReadonlyMap<string, CompiledTable>): Promise<void> {
    return this.served.readersEnded(tables);
  }

  /** See {@link ServedSchema.retire}. */
  retire(tables: ReadonlyMap<string, CompiledTable>): void {
    this.served.retire(tables);
  }

  isRetired(tables: ReadonlyMap<string, CompiledTable>): boolean {
    return this.served.isRetired(tables);
  }
}
