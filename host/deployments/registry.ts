import { PlatformError } from "../../sdk/values/index.js";
import type { HostDatabase, HostMessage, KvOperation, RecordStore } from "../db/index.js";
import { ArtifactStore } from "./artifacts.js";
import { type DeploymentRecord, type RemovalRecord, storageQuotaOwner } from "./records.js";

/** Records parsed per read of {@link DeploymentRegistry.storedList}. */
const STORED_PAGE = 8;

/** Reads of a deployment's record after an announcement, the first and its retries (about 5 minutes in all). */
const RECHECK_ATTEMPTS = 12;

/**
 * The stored deployment records and artifacts of a host, with an in-memory cache of records. Every
 * host sharing the database announces its changes; on another host's announcement the cached
 * record is dropped, and `onGone` runs when the deployment no longer exists (to stop its isolate
 * and forget its loaded state), `onChanged` when it still does (deployed again, or its settings
 * changed), as it also does after this host's own announcements.
 */
export class DeploymentRegistry {
  private readonly records: RecordStore<DeploymentRecord>;
  /** The bundles deployments serve, each kept while one uses it. */
  readonly artifacts: ArtifactStore;
  private readonly removals: RecordStore<RemovalRecord>;
  private readonly cache = new Map<string, DeploymentRecord>();
  /**
   * The incarnation of every deployment this host has had a record of, kept while announcements
   * empty the cache: what tells a deployment deleted and created again under its id, its deletion
   * unheard, from one merely changed.
   */
  private readonly incarnations = new Map<string, string | null>();
  /**
   * The share owner of every deployment this host has had a record of ({@link storageQuotaOwner}),
   * kept while announcements empty the cache: a deployment whose record an announcement had
   * just dropped counted as a developer of its own, so another host's flood of settings changes
   * let one developer's deployments take more than a developer's share of the database.
   */
  private readonly owners = new Map<string, string>();
  /** How many times each id's record was announced changed or retired (see {@link get}). */
  private readonly generations = new Map<string, number>();
  /** Each id whose record is being read after an announcement (see {@link recheck}). */
  private readonly rechecks = new Map<string, { again: boolean }>();

  constructor(
    private readonly db: HostDatabase,
    onGone: (id: string) => void,
    private readonly onChanged: (id: string) => void = () => {},
  ) {
    this.records = db.records<DeploymentRecord>("deployments");
    this.artifacts = new ArtifactStore(db);
    this.removals = db.records<RemovalRecord>("deployment-removals");
    db.onAnnouncement((message) => {
      // After a resync, every deployment this host knows may have changed or gone.
      const ids =
        message.type === "deployment"
          ? [message.id]
          : message.type === "resync"
            ? [...new Set([...this.cache.keys(), ...this.incarnations.keys()])]
            : [];
      for (const id of ids) {
        this.changed(id);
        this.recheck(id, onGone);
      }
    });
  }

  /**
   * Reads `id`'s record after another host's announcement and tells what became of it. A read
   * that fails (the database busy or away) is tried again, later each time, up to
   * {@link RECHECK_ATTEMPTS} times: left unhandled it would end the host, and skipped it would leave
   * a deleted deployment served here. One chain of reads per id: an announcement arriving while
   * one runs makes it read once more when it ends.
   */
  private recheck(id: string, onGone: (id: string) => void): void {
    const running = this.rechecks.get(id);
    if (running) {
      running.again = true;
      return;
    }
    const chain = { again: false };
    this.rechecks.set(id, chain);
    const read = (attempt: number): void => {
      chain.again = false;
      const known = this.incarnations.get(id);
      const generation = this.generations.get(id);
      this.records.get(id).then(
        (record) => {
          // Another incarnation under the same id (deleted and created again, its deletion's
          // message missed): the one this host knew is gone (its isolate, database, sockets and
          // live queries with it) before the new one is taken as changed.
          const incarnation = record ? (record.incarnation ?? null) : undefined;
          if (!record || (known !== undefined && known !== incarnation)) onGone(id);
          if (record) {
            // Kept unless another announcement came meanwhile (see get).
            if (this.generations.get(id) === generation) this.keep(record);
            else this.incarnations.set(id, incarnation as string | null);
            this.onChanged(id);
          } else {
            this.incarnations.delete(id);
            this.owners.delete(id);
          }
          if (chain.again) read(0);
          else this.rechecks.delete(id);
        },
        (error: unknown) => {
          if (attempt === 0)
            console.error(`Reading deployment ${id} after an announcement failed; trying again:`, error);
          if (attempt + 1 >= RECHECK_ATTEMPTS) {
            console.error(
              `Gave up reading deployment ${id} after an announcement; the next resync reads it.`,
            );
            this.rechecks.delete(id);
            return;
          }
          setTimeout(() => read(attempt + 1), Math.min(30_000, 500 * 2 ** attempt)).unref();
        },
      );
    };
    read(0);
  }

  /** The share owner of deployment `id` as last read, without reading the store. */
  ownerOf(id: string): string | undefined {
    return this.owners.get(id);
  }

  /** The cached record of `id`, without reading the store (the call path's fast lookup). */
  cached(id: string): DeploymentRecord | undefined {
    return this.cache.get(id);
  }

  /**
   * The deployment `id`, or undefined. A record read while an announcement or a retirement of `id`
   * came is answered but not kept: it may be older than what they announced.
   */
  async get(id: string): Promise<DeploymentRecord | undefined> {
    const cached = this.cache.get(id);
    if (cached) return cached;
    const generation = this.generations.get(id);
    const record = await this.records.get(id);
    if (this.generations.get(id) === generation) {
      if (record) this.keep(record);
      else this.owners.delete(id);
    }
    return record;
  }

  /** Marks what was read of `id` before now as possibly stale (see {@link get}). */
  private changed(id: string): void {
    this.cache.delete(id);
    this.bump(id);
  }

  /** A read of `id` begun before now is not kept: something newer is, or was announced. */
  private bump(id: string): void {
    this.generations.set(id, (this.generations.get(id) ?? 0) + 1);
  }

  /** The deployment `id` as stored now, without reading or filling the cache. */
  stored(id: string): Promise<DeploymentRecord | undefined> {
    return this.records.get(id);
  }

  /**
   * The deployment `id` as stored now, bypassing the cache (which another host's change may not
   * have reached yet); what decisions under the id's lock are made on.
   */
  async reload(id: string): Promise<DeploymentRecord | undefined> {
    this.cache.delete(id);
    return this.get(id);
  }

  /** The deployment `id`, or `not_found`. */
  async require(id: string): Promise<DeploymentRecord> {
    const record = await this.get(id);
    if (!record) throw new PlatformError("not_found", `No deployment named ${id}.`);
    return record;
  }

  /**
   * Every deployment, in id order: their ids read from the store, each record from the cache, or
   * read alone (not kept: a listing does not fill the cache with every deployment of the host). A
   * record holds its capsule's whole declaration (up to 2 Mi characters): parsing every one at once
   * on each listing (a developer's `GET /v1/me`, a new deployment's count) held every tenant's
   * calls for seconds when one developer's records were large.
   */
  async list(): Promise<DeploymentRecord[]> {
    const records: DeploymentRecord[] = [];
    for await (const ids of this.records.idPages())
      for (const id of ids) {
        const record = this.cache.get(id) ?? (await this.records.get(id));
        if (record) records.push(record);
      }
    return records;
  }

  /**
   * Every deployment as stored now, bypassing the cache (the artifact sweep decides what to delete
   * by it: a cached record an announcement has not reached yet names an artifact no longer served),
   * a few records per read so that no turn of the event loop parses many.
   */
  private async storedList(): Promise<DeploymentRecord[]> {
    const records: DeploymentRecord[] = [];
    for await (const page of this.records.entryPages(STORED_PAGE))
      for (const [, record] of page) records.push(record);
    return records;
  }

  /**
   * Stores and caches `record`, telling the other hosts in the same write (see
   * `HostDatabase.write`): sent after it as a second round trip, a failure to send was swallowed,
   * and they served the old record (its access settings too) until they restarted.
   */
  async store(record: DeploymentRecord): Promise<void> {
    await this.db.write(this.writesOf(record), [this.announcementOf(record.id)]);
    this.keep(record);
  }

  /** The writes that store `record`, for a batch that commits it with other writes (a deploy, an import). */
  writesOf(record: DeploymentRecord): KvOperation[] {
    return [{ type: "put", key: this.records.key(record.id), value: JSON.stringify(record) }];
  }

  /** What tells the other hosts that deployment `id`'s record changed, for the batch that writes it. */
  announcementOf(id: string): HostMessage {
    return { type: "deployment", id };
  }

  /**
   * Caches `record` once a batch stored it with its {@link announcementOf}; then
   * {@link changedHere} tells this host's own listeners.
   */
  remember(record: DeploymentRecord): void {
    this.keep(record);
  }

  /** Tells this host's listeners that deployment `id` changed (the other hosts heard it from its write). */
  changedHere(id: string): void {
    if (this.cache.has(id)) this.onChanged(id);
  }

  private keep(record: DeploymentRecord): void {
    // Kept now, newer than whatever a read under way brings back (this host's own writes are not
    // announced to it: a re-read of another host's change finishing after one would undo it).
    this.bump(record.id);
    this.cache.set(record.id, record);
    this.incarnations.set(record.id, record.incarnation ?? null);
    this.owners.set(record.id, storageQuotaOwner(record));
  }

  /**
   * Tells the other hosts that deployment `id` changed or was gone, for a change not written with
   * its announcement (a removal a crash left unfinished); sent again while it fails (see
   * `HostDatabase.announce`).
   */
  async announce(id: string): Promise<void> {
    await this.db.announce(this.announcementOf(id));
  }

  /** Stores `record`, telling every host (this one's listeners too). */
  async save(record: DeploymentRecord): Promise<DeploymentRecord> {
    await this.store(record);
    this.changedHere(record.id);
    return record;
  }

  /**
   * Hides deployment `record` and marks its removal as started, in ONE batch, which tells the other
   * hosts: after a crash either the deployment is still whole, or it is gone, every host told, and
   * its removal marker says what is left to do.
   */
  async retire(record: DeploymentRecord): Promise<RemovalRecord> {
    const removal: RemovalRecord = {
      id: record.id,
      incarnation: record.incarnation ?? null,
      owner: record.owner,
      quotaOwner: storageQuotaOwner(record),
      startedAt: Date.now(),
    };
    const use = this.artifacts.endWrite(record.id, record.artifact);
    await this.db.write(
      [
        { type: "put", key: this.removals.key(record.id), value: JSON.stringify(removal) },
        { type: "del", key: this.records.key(record.id) },
        use,
      ],
      [this.announcementOf(record.id)],
    );
    this.changed(record.id);
    this.incarnations.delete(record.id);
    this.owners.delete(record.id);
    return removal;
  }

  /** The unfinished removal of deployment `id`, or undefined. */
  removal(id: string): Promise<RemovalRecord | undefined> {
    return this.removals.get(id);
  }

  /** Every unfinished removal (a host finishes them when it starts). */
  unfinishedRemovals(): Promise<RemovalRecord[]> {
    return this.removals.list();
  }

  /** Ends the removal of `id`: its id can be used again. */
  removalDone(id: string): Promise<void> {
    return this.removals.delete(id);
  }

  /**
   * Removes every artifact no deployment uses (see {@link ArtifactStore.sweep}); returns how many.
   */
  sweepArtifacts(): Promise<number> {
    return this.artifacts.sweep(() => this.storedList());
  }

  /** Once per database: the artifact uses of records stored before uses were kept (see {@link ArtifactStore.adoptRecords}). */
  adoptArtifactUses(): Promise<void> {
    return this.artifacts.adoptRecords(() => this.storedList());
  }
}
