import { PlatformError } from "../../sdk/values/index.js";
import type { HostDatabase, HostMessage, KvOperation, LockFence, RecordStore } from "../db/index.js";
import { ArtifactStore, storedArtifacts } from "./artifacts.js";
import { type OpenRead, ReadGenerations } from "./read-generations.js";
import { listRecords } from "./record-listing.js";
import { RecordRechecks } from "./record-rechecks.js";
import { RecordStamps, StampChecks } from "./record-stamps.js";
import { type DeploymentRecord, storageQuotaOwner } from "./records.js";

/**
 * The stored deployment records and artifacts of a host, with an in-memory cache of records. Every
 * host sharing the database announces its changes; on another host's announcement the cached
 * record is dropped, and `onGone` runs when the deployment no longer exists (to stop its isolate
 * and forget its loaded state), `onChanged` when it still does (deployed again, or its settings
 * changed), as after this host's own changes. Records' stamps (record-stamps.ts) catch the rest.
 */
export class DeploymentRegistry {
  private readonly records: RecordStore<DeploymentRecord>;
  /** The bundles deployments serve, each kept while one uses it. */
  readonly artifacts: ArtifactStore;
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
  /** Which reads under way may be kept: none begun before the id was changed (see {@link get}). */
  private readonly generations = new ReadGenerations();
  /** Reads of records after word that they changed. */
  private readonly rechecks: RecordRechecks<OpenRead>;
  private readonly stamps: RecordStamps;
  private readonly stampChecks: StampChecks | undefined;
  /** Whether a check of the stamps ran: the first reads every known record again. */
  private checked = false;

  constructor(
    private readonly db: HostDatabase,
    private readonly onGone: (id: string) => void,
    private readonly onChanged: (id: string) => void = () => {},
  ) {
    this.records = db.records<DeploymentRecord>("deployments");
    this.artifacts = new ArtifactStore(db);
    this.stamps = new RecordStamps(db);
    this.rechecks = new RecordRechecks(
      (id) => this.records.get(id),
      (id) => this.generations.begin(id),
      (id, record, read) => this.settle(id, record, read),
      (read) => this.generations.end(read),
    );
    db.onAnnouncement((message) => {
      // After a resync, every deployment this host knows may have changed or gone.
      const ids =
        message.type === "deployment" ? [message.id] : message.type === "resync" ? this.knownIds() : [];
      for (const id of ids) {
        this.changed(id);
        this.rechecks.run(id);
      }
    });
    this.stampChecks = db.shared ? new StampChecks(() => this.checkStamps()) : undefined;
  }

  /** Every deployment this host has had a record of. */
  private knownIds(): string[] {
    return [...new Set([...this.cache.keys(), ...this.incarnations.keys()])];
  }

  /**
   * Takes what a read of `id` after word of a change found. Another incarnation under the same id
   * than the one known now (deleted and created again, its deletion's message missed): the one this
   * host knew is gone (its isolate, database, sockets and live queries with it) before the new one
   * is changed. A read overtaken (a newer record kept, or word of another change, whose read
   * follows) decides nothing: begun before a deletion and a re-creation, it ended the new one.
   */
  private settle(id: string, record: DeploymentRecord | undefined, read: OpenRead) {
    if (!this.generations.unchanged(read)) {
      if (record) this.onChanged(id);
      return;
    }
    const known = this.incarnations.get(id);
    if (!record || (known !== undefined && known !== (record.incarnation ?? null))) this.onGone(id);
    if (record) {
      this.keep(record);
      this.onChanged(id);
    } else this.forgetGone(id);
  }

  /**
   * Reads again, as if announced, the known records whose stamps moved (all at the first check) and
   * those whose reads gave up, but a cached one the store holds as it is (heard of already: as
   * changed, its live queries ran twice); the others' reads under way are not kept.
   */
  private async checkStamps(): Promise<void> {
    const moved = await this.stamps.moved();
    const first = !this.checked;
    this.checked = true;
    for (const id of first ? new Set([...moved, ...this.knownIds()]) : moved) {
      const cached = this.cache.get(id);
      if (!first && cached && (await this.sameAsStored(cached))) continue;
      const known = this.cache.has(id) || this.incarnations.has(id);
      this.changed(id);
      if (known) this.rechecks.run(id);
    }
    this.rechecks.retryGivenUp();
  }

  /** Runs a check of the records' stamps now, after the one under way (tests; a timer runs them). */
  async checkStampsNow(): Promise<void> {
    await this.stampChecks?.runNow();
  }

  /** Whether the store holds `record` as it is (false when it cannot be read now). */
  private async sameAsStored(record: DeploymentRecord): Promise<boolean> {
    const stored = await this.records.get(record.id).catch(() => null);
    return JSON.stringify(stored) === JSON.stringify(record);
  }

  /** Stops the periodic checks of the records' stamps, and the reads after word of a change. */
  close(): void {
    this.stampChecks?.stop();
    this.rechecks.stop();
  }

  /** How many ids it keeps of beyond its cache: incarnations, owners, reads under way (tests). */
  keptIds(): number[] {
    return [this.incarnations.size, this.owners.size, this.generations.size];
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
   * The deployment `id`, or undefined; one read while word of a change came is not kept (it may be
   * older). One kept naming another incarnation than known (deleted and created again, unheard of)
   * ends the old one first, as {@link settle} does: calls before that read's end ran the new code
   * for the old one's sockets and live queries, with the identities they were opened with. None
   * found for a known one ends it too: a deploy creating the id again here kept its log lines.
   */
  async get(id: string): Promise<DeploymentRecord | undefined> {
    const cached = this.cache.get(id);
    if (cached) return cached;
    return this.generations.read(
      id,
      () => this.records.get(id),
      (record) => {
        const known = this.incarnations.get(id);
        if (known !== undefined && (!record || known !== (record.incarnation ?? null))) this.onGone(id);
        record ? this.keep(record) : this.forgetGone(id);
      },
    );
  }

  /** Forgets `id`'s incarnation and owner: it has no record now. */
  private forgetGone(id: string): void {
    this.incarnations.delete(id);
    this.owners.delete(id);
  }

  /** Marks what was read of `id` before now as possibly stale (see {@link get}). */
  private changed(id: string): void {
    this.cache.delete(id);
    this.generations.changed(id);
  }

  /** The deployment `id` as stored now, without reading or filling the cache. */
  stored(id: string): Promise<DeploymentRecord | undefined> {
    return this.records.get(id);
  }

  /** The deployment `id` as stored now, not as cached (decisions under the id's lock are made on it). */
  async reload(id: string): Promise<DeploymentRecord | undefined> {
    const before = this.cache.get(id);
    this.cache.delete(id);
    // Deleted and created again unheard of: the read ends the old one (its isolate, its log lines;
    // see get). And another host's change not heard of yet is told as if announced (the stamps'
    // check would not).
    const record = await this.get(id);
    // Gone: ended by that read, unless a newer change overtook it (whose read then decides).
    if (before && (record ? JSON.stringify(record) !== JSON.stringify(before) : this.incarnations.has(id)))
      this.rechecks.run(id);
    return record;
  }

  /** The deployment `id`, or `not_found`. */
  async require(id: string): Promise<DeploymentRecord> {
    const record = await this.get(id);
    if (!record) throw new PlatformError("not_found", `No deployment named ${id}.`);
    return record;
  }

  /** Every deployment, in id order, each record from the cache or read alone (see {@link listRecords}). */
  list(): Promise<DeploymentRecord[]> {
    return listRecords(this.records, (id) => this.cache.get(id));
  }

  /**
   * Stores and caches `record`, telling the other hosts in the same write (see
   * `HostDatabase.write`): sent after it as a second round trip, a failure to send was swallowed,
   * and they served the old record (its access settings too) until they restarted. `fence`: the
   * deployment's lifecycle lock's, under which `record` was made from the one before.
   */
  async store(record: DeploymentRecord, fence?: LockFence): Promise<void> {
    await this.db.write(this.writesOf(record), [this.announcementOf(record.id)], fence);
    this.keep(record);
  }

  /** The writes that store `record`, for a batch that commits it with other writes (a deploy, an import). */
  writesOf(record: DeploymentRecord): KvOperation[] {
    return [
      { type: "put", key: this.records.key(record.id), value: JSON.stringify(record) },
      ...this.stamps.writes(record.id),
    ];
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
    this.generations.changed(record.id);
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

  /** Stores `record`, telling every host (this one's listeners too); `fence` as {@link store}'s. */
  async save(record: DeploymentRecord, fence?: LockFence): Promise<DeploymentRecord> {
    await this.store(record, fence);
    this.changedHere(record.id);
    return record;
  }

  /**
   * Hides deployment `record` and marks its removal as started (`marker`, the removal's record), in
   * ONE batch, which tells the other hosts: after a crash either the deployment is still whole, or
   * it is gone, every host told, and its removal marker says what is left to do. `fence`: the
   * deployment's lifecycle lock's, under which `record` was read.
   */
  async retire(record: DeploymentRecord, marker: KvOperation, fence?: LockFence): Promise<void> {
    await this.db.write(
      [
        marker,
        { type: "del", key: this.records.key(record.id) },
        this.artifacts.endWrite(record.id, record.artifact),
        ...this.stamps.writes(record.id, true),
      ],
      [this.announcementOf(record.id)],
      fence,
    );
    this.changed(record.id);
    this.forgetGone(record.id);
  }

  /** Removes every artifact no deployment uses (see {@link ArtifactStore.sweep}); returns how many. */
  sweepArtifacts(): Promise<number> {
    return this.artifacts.sweep(storedArtifacts(this.records));
  }

  /** Once per database: the artifact uses of records stored before uses were kept (see {@link ArtifactStore.adoptRecords}). */
  adoptArtifactUses(): Promise<void> {
    return this.artifacts.adoptRecords(storedArtifacts(this.records));
  }
}
