import { CursorCodec } from "./cursor.js";
import { storedCursorKey } from "./cursor-key.js";
import { checkHostMessage, type HostMessage, messageTexts } from "./host-message.js";
import {
  ClassicKv,
  type FencedWork,
  type IfFree,
  type KvOperation,
  type KvStore,
  type LockFence,
  type LockOptions,
  PostgresKv,
} from "./kv/index.js";
import { holdingAllAtOnce } from "./locks-at-once.js";
import { RecordStore } from "./records.js";
import { type DatabaseQuota, databaseQuota } from "./row-bytes.js";
import { TenantDatabase } from "./tenant-database.js";
import { NamedLocks } from "./write-lock.js";

/**
 * How many times {@link HostDatabase.exclusiveAtOnce} waits for a busy lock before it runs its work
 * without them: a bound on its wait when other holders keep some lock of its busy at all times.
 */
const AT_ONCE_ROUNDS = 100;

/** Attempts to send an announcement that fails, the first and its retries (about 5 minutes in all). */
const ANNOUNCE_ATTEMPTS = 12;

/**
 * The host's document database: one key-value store holding every deployment, each behind its
 * own {@link TenantDatabase}. The store is embedded classic-level by default, or PostgreSQL,
 * which several host processes share; then commits and migrations of one host reach the others
 * (live queries, schema reloads) through the store's broadcasts. Knows nothing of HTTP or isolates.
 */
export class HostDatabase {
  private readonly deployments = new Map<string, Promise<TenantDatabase>>();
  private readonly locks = new NamedLocks();
  private readonly messageHandlers = new Set<(message: HostMessage) => void>();
  private closed = false;
  /**
   * Whose share of the store's connections deployment `id`'s work uses (see `KvStore.snapshot`):
   * the host's deployment layer names the developer owning it, so one developer's deployments
   * together get one share however many they run; by default each deployment is its own.
   */
  shareOf: (id: string) => string = (id) => id;

  private constructor(
    readonly store: KvStore,
    private readonly cursors: CursorCodec,
    private readonly quota: DatabaseQuota,
  ) {
    store.bus.onBroadcast((text) => {
      let message: HostMessage | undefined;
      try {
        message = checkHostMessage(JSON.parse(text));
      } catch {
        return;
      }
      if (!message) return;
      const type = message.type;
      this.receive(message).catch((error: unknown) =>
        console.error(`Handling another host's ${type} announcement failed:`, error),
      );
    });
  }

  /**
   * Opens the database: a `postgres(ql)://` URL connects to PostgreSQL, anything else a folder for
   * the embedded store (created if needed). `quota`: what each deployment may store (tests pass less).
   */
  static async open(location: string, quota?: Partial<DatabaseQuota>): Promise<HostDatabase> {
    const store = /^postgres(ql)?:\/\//.test(location)
      ? await PostgresKv.open(location, { silenceMs: databaseQuota(quota).silenceMs })
      : await ClassicKv.open(location);
    // Opened here, so closed here: left open it held the folder's lock (or the connections).
    return HostDatabase.openStore(store, quota).catch(async (error: unknown) => {
      await store.close().catch(() => {});
      throw error;
    });
  }

  /** Opens the database on an already open store (`quota`: see {@link open}). */
  static async openStore(store: KvStore, quota?: Partial<DatabaseQuota>): Promise<HostDatabase> {
    return new HostDatabase(store, new CursorCodec(await storedCursorKey(store)), databaseQuota(quota));
  }

  /** True when other host processes share this database. */
  get shared(): boolean {
    return this.store.supports.sharedAcrossProcesses;
  }

  private async receive(message: HostMessage): Promise<void> {
    if (message.type === "resync") {
      // Commits, migrations and deletions may have gone unheard: every loaded deployment reads
      // its schema again and its listeners look at everything again.
      for (const loading of [...this.deployments.values()]) {
        const deployment = await loading.catch(() => undefined);
        await deployment?.refresh(deployment.refreshKeys(true)).catch(() => {});
        deployment?.emitCommit(undefined);
      }
    } else if (message.type === "commit" || message.type === "schema") {
      const deployment = await this.deployments.get(message.deployment)?.catch(() => undefined);
      // Read whole: a host of an older version stores a schema without changing its tag. A read
      // that fails leaves it to the next write lock, which reads the tag again.
      if (message.type === "schema")
        await deployment?.refresh(deployment.refreshKeys(true)).catch((error: unknown) => {
          console.error(`Reading deployment ${message.deployment}'s new schema failed:`, error);
        });
      else
        deployment?.emitCommit(
          message.all ? undefined : (message.keys ?? []).map((hex) => Buffer.from(hex, "hex")),
        );
    }
    // Also for a deployment this host has not loaded: a socket may hold one of its sessions here
    // before any call loaded it (a sign-out or a guest upgrade elsewhere ends that session).
    this.tell(message);
  }

  /**
   * Tells this host's listeners `message` as if another host had announced it: also what a
   * deployment's database says when its data turned out to be another incarnation's than this
   * host took it for (deleted and created again, unheard of here: incarnation.ts), so that its
   * record is read again.
   */
  private tell(message: HostMessage): void {
    for (const handler of [...this.messageHandlers]) {
      try {
        handler(message);
      } catch (error) {
        // One handler's failure leaves the others to hear the message.
        console.error(`Handling another host's ${message.type} announcement failed:`, error);
      }
    }
  }

  /**
   * Tells this host's listeners that deployment `id` changed, as if announced, so that its record
   * is read again: what finds the deployment's data or files another incarnation's than this host
   * took it for calls it (host/db/incarnation.ts, host/storage/objects.ts).
   */
  changedUnheard(id: string): void {
    this.tell({ type: "deployment", id });
  }

  /**
   * Tells the other hosts on this database something changed (no-op when there are none), for a
   * change not written with its announcement (see {@link write}). A broadcast that fails is sent
   * again, later each time, up to {@link ANNOUNCE_ATTEMPTS} times, in the background: swallowed,
   * it left the other hosts serving a deployment's old record until they restarted. Resolves
   * after the first attempt, sent or not; never rejects.
   */
  async announce(message: HostMessage): Promise<void> {
    if (!this.store.supports.sharedAcrossProcesses) return;
    const text = JSON.stringify(message);
    const attempt = async (n: number): Promise<void> => {
      try {
        await this.store.bus.broadcast(text);
      } catch (error) {
        if (this.closed) return;
        if (n + 1 >= ANNOUNCE_ATTEMPTS) {
          console.error(`Gave up announcing ${text} to the other hosts:`, error);
          return;
        }
        if (n === 0) console.error(`Announcing ${text} to the other hosts failed; trying again:`, error);
        setTimeout(() => void attempt(n + 1), Math.min(30_000, 250 * 2 ** n)).unref();
      }
    };
    await attempt(0);
  }

  /**
   * Writes `operations` in one batch that also tells the other hosts `announce`: on PostgreSQL in
   * the write's own statement, so they hear of it exactly when it commits, and a failure to send
   * is the write's own (nothing lands), never a change they miss. `fence`: see `KvStore.batch`.
   */
  write(operations: KvOperation[], announce: HostMessage[], fence?: LockFence): Promise<void> {
    return this.store.batch(operations, messageTexts(announce), fence);
  }

  /** Receives other hosts' announcements; returns the unsubscribe function. */
  onAnnouncement(handler: (message: HostMessage) => void): () => void {
    this.messageHandlers.add(handler);
    return () => this.messageHandlers.delete(handler);
  }

  /**
   * Runs `work` holding the lock `name` in this process and against every other host on the
   * database (storage quotas use it, so two hosts cannot both take an owner's last free byte).
   * A lock held across other locks' use, for long, is `outer` (see {@link LockOptions}). `work`
   * gets the lock's fence, if any, for its writes (see `HostBus.lockAcrossProcesses`).
   */
  exclusive<T>(name: string, work: FencedWork<T>, options?: LockOptions): Promise<T> {
    const fenced = (_read?: unknown, fence?: LockFence) => work(fence);
    return this.locks.run(name, () => this.store.bus.lockAcrossProcesses(name, fenced, options));
  }

  /**
   * Runs `work` holding lock `name` in this process only: other hosts are not asked (see
   * {@link acrossIfFree}). Waiting for it holds no connection of the store.
   */
  inProcess<T>(name: string, work: () => Promise<T>): Promise<T> {
    return this.locks.run(name, work);
  }

  /** How many in this process hold lock `name` or wait for it. */
  usersHere(name: string): number {
    return this.locks.usersOf(name);
  }

  /**
   * For a caller holding lock `name` in this process ({@link inProcess}): runs `work` holding it
   * against every other host too, only when none holds it (see `HostBus.lockAcrossProcessesIfFree`).
   */
  acrossIfFree<T>(name: string, work: FencedWork<T>, options?: LockOptions): Promise<IfFree<T>> {
    return this.store.bus.lockAcrossProcessesIfFree(name, work, options);
  }

  /**
   * Runs `work` holding every lock of `names`, taken together at a moment when all of them are
   * free: the caller never holds some while it waits for another, so one long holder (a slow
   * import) delays only this caller, not everyone wanting a lock it would have taken first. After
   * {@link AT_ONCE_ROUNDS} waits (other holders keep some lock busy at all times) it runs
   * `unlocked` instead, holding none: taking them one after another would hold every lock before
   * the busy one while it waits. On a store other processes share, whose locks are the store's,
   * they are taken in order. `signal` ends the wait between rounds.
   */
  async exclusiveAtOnce<T>(
    names: string[],
    work: () => Promise<T>,
    unlocked: () => Promise<T>,
    options?: LockOptions & { signal?: AbortSignal },
  ): Promise<T> {
    const sorted = [...new Set(names)].sort();
    const inOrder = (rest: string[]): Promise<T> => {
      const [first, ...others] = rest;
      return first === undefined ? work() : this.exclusive(first, () => inOrder(others), options);
    };
    if (this.store.supports.sharedAcrossProcesses) return inOrder(sorted);
    const waitFor = (name: string) => this.exclusive(name, async () => {});
    return holdingAllAtOnce(this.locks, sorted, waitFor, work, unlocked, AT_ONCE_ROUNDS, options?.signal);
  }

  /** The database of deployment `id`, loaded once and shared. */
  deployment(id: string): Promise<TenantDatabase> {
    let loading = this.deployments.get(id);
    if (!loading) {
      loading = new TenantDatabase(
        this.store,
        id,
        this.cursors,
        this.quota,
        () => this.shareOf(id),
        () => this.changedUnheard(id),
      ).load();
      loading.catch(() => this.deployments.delete(id));
      this.deployments.set(id, loading);
    }
    return loading;
  }

  /** A namespace of host-wide JSON records. */
  records<T>(namespace: string): RecordStore<T> {
    return new RecordStore<T>(this.store, namespace);
  }

  /** Deletes every row, index entry, count and metadata record of a deployment (see {@link TenantDatabase.drop}). */
  async dropDeployment(id: string, lifecycle?: LockFence): Promise<void> {
    await (await this.deployment(id)).drop(lifecycle);
    this.deployments.delete(id);
  }

  /**
   * Forgets the loaded state of a deployment that was deleted (here or by another host). Writes
   * still queued on it fail with `not_found`: waiting for their turn, they could otherwise land in
   * a deployment created anew under the same id.
   */
  forget(id: string): void {
    const loaded = this.deployments.get(id);
    this.deployments.delete(id);
    loaded?.then(
      (deployment) => deployment.deleted(),
      () => {},
    );
  }

  /** Closes the store; open transactions fail afterwards, and announcements are no longer retried. */
  async close(): Promise<void> {
    this.closed = true;
    await this.store.close();
  }
}
