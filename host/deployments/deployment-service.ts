import { type BridgeHttpRequest, type BridgeIdentity, LIMITS } from "../../sdk/protocol/index.js";
import { authoriseClaim } from "../access/index.js";
import type { SessionProof } from "../auth/index.js";
import {
  type FencedWork,
  type HostDatabase,
  type IfFree,
  type MigrationProgress,
  replacedError,
} from "../db/index.js";
import { type IsolateObserver, IsolatePool, type PoolOptions } from "../isolates/index.js";
import type { StorageHolder } from "../storage/index.js";
import { type Call, CallExecutor, type CallResult } from "./call-execution.js";
import type { CallObserver } from "./call-observer.js";
import { ClientFileStore, type FoundClientFile } from "./client-files.js";
import { type DeployGuard, type DeployInput, type DeployResult, deploy } from "./deploy-pipeline.js";
import { DeploymentEvents } from "./deployment-events.js";
import { currentIncarnation, findClientFile, knownDeployments, storageHolderOf } from "./deployment-reads.js";
import { type GuestRetirement, upgradeGuest } from "./guest-upgrade.js";
import { DeploymentImport } from "./imported-deployment.js";
import type { LogHub } from "./log-hub.js";
import { OwnerCap } from "./owner-cap.js";
import { rewriteHostRecord } from "./record-rewrite.js";
import type { DeploymentRecord } from "./records.js";
import { DeploymentRegistry } from "./registry.js";
import {
  DeploymentRemovals,
  type DeploymentScopedState,
  type StillAllowed,
  unfinishedRemovalLine,
} from "./removal.js";
import { claimDeployment, updateSettings } from "./settings.js";

/**
 * Every deployment of a host: records, artifacts, deploys and handler calls. The HTTP layer only
 * translates requests into calls on this object; each job lives in its own file (the registry, the
 * deploy pipeline, call execution, guest upgrade) and this class wires them to one pool.
 */
export class DeploymentService {
  readonly pool: IsolatePool;
  private readonly registry: DeploymentRegistry;
  private readonly calls: CallExecutor;
  private readonly removals: DeploymentRemovals;
  private readonly clientFiles: ClientFileStore;
  private readonly events = new DeploymentEvents();
  /** How many deployments one developer may own; callers add theirs through it (see owner-cap.ts). */
  readonly owners: OwnerCap;

  constructor(
    readonly db: HostDatabase,
    /** Every handler's `ctx.log` lines. */
    readonly logs: LogHub,
    poolOptions: Partial<PoolOptions> = {},
    /** The host's metrics: told of every call and of isolates started, evicted and stopped. */
    observer?: CallObserver & IsolateObserver,
    deploymentsPerDeveloper: number = LIMITS.deploymentsPerDeveloper,
  ) {
    // A deployment is gone (deleted here or by another host): stop its isolate, forget its loaded state.
    const stop = (id: string) => {
      this.pool.remove(id);
      db.forget(id);
      logs.forget(id);
      // Undefined only while this constructor runs (no deployment goes then).
      this.calls?.forget(id);
      this.events.gone(id);
    };
    this.registry = new DeploymentRegistry(db, stop, (id) => this.events.changed(id));
    this.owners = new OwnerCap(() => this.registry.list(), deploymentsPerDeveloper);
    // One developer's deployments read through one share of the database's connections.
    db.shareOf = (id) => this.registry.ownerOf(id) ?? `dev:${id}`;
    this.removals = new DeploymentRemovals(db, this.registry, stop);
    // Client files are part of what a deploy stores: removed with the deployment, first after its rows.
    this.clientFiles = new ClientFileStore(db);
    this.removals.add(this.clientFiles);
    // So are the code caches made after its code ran (awaited here, so a removal finished is whole).
    this.removals.add({ purgeDeployment: (id) => this.pool.purgeCodeCaches(id) });
    const known = knownDeployments(this.registry);
    this.pool = new IsolatePool((hash) => this.registry.artifacts.code(hash), poolOptions, observer, known);
    this.registry.artifacts.onRemoved = (hash) => this.pool.forgetCapsuleCache(hash);
    this.calls = new CallExecutor(db, this.pool, logs, observer, (id) => this.registry.cached(id));
  }

  /** Calls `listener` with the id of each deployment deleted from now on (see {@link DeploymentEvents.onGone}). */
  onGone(listener: (id: string) => void): () => void {
    return this.events.onGone(listener);
  }

  /** Calls `listener` with the id of each deployment changed from now on (see {@link DeploymentEvents.onChanged}). */
  onChanged(listener: (id: string) => void): () => void {
    return this.events.onChanged(listener);
  }

  /** The deployment `id`, or undefined. */
  get(id: string): Promise<DeploymentRecord | undefined> {
    return this.registry.get(id);
  }

  /** Whether this host holds the record of `id`: looking it up then reads nothing. */
  holds(id: string): boolean {
    return this.registry.cached(id) !== undefined;
  }

  /** The deployment `id`, or `not_found`. */
  require(id: string): Promise<DeploymentRecord> {
    return this.registry.require(id);
  }

  /** Every deployment. */
  list(): Promise<DeploymentRecord[]> {
    return this.registry.list();
  }

  /**
   * Deploys `input` as deployment `id`; see {@link deploy} for the steps and what a failure keeps.
   * `stillAllowed` runs first once the id's lock is held.
   */
  deploy(
    id: string,
    input: DeployInput,
    onProgress?: (progress: MigrationProgress) => void,
    guard?: DeployGuard,
    stillAllowed?: StillAllowed,
  ): Promise<DeployResult> {
    // Under the id's lock: a deploy never races a delete of the same id, nor revives a half-removed one.
    return this.removals.whileLocked(
      id,
      async (fence) => {
        await stillAllowed?.();
        return deploy(
          { registry: this.registry, pool: this.pool, db: this.db, clientFiles: this.clientFiles },
          id,
          input,
          onProgress,
          guard,
          fence,
        );
      },
      // A new deployment's lock is taken in the turn of the developer creating it.
      { creator: input.owner },
    );
  }

  /** The file at `path` of the web client deployment `id` serves, or undefined (see {@link findClientFile}). */
  clientFile(id: string, path: string, withBytes: boolean): Promise<FoundClientFile | undefined> {
    return findClientFile(this.registry, this.clientFiles, id, path, withBytes);
  }

  /**
   * Runs `work` holding deployment `id`'s lifecycle lock, after finishing an unfinished removal of
   * it: an import holds it as a deploy does, so neither races a deploy or delete of the same id.
   * `turn: false` takes it outside its developer's turn (see DeploymentRemovals.whileLocked).
   */
  whileLocked<T>(id: string, work: FencedWork<T>, options: { turn?: boolean } = {}): Promise<T> {
    return this.removals.whileLocked(id, work, options);
  }

  /** An import's hold of deployment `id`'s lock, around the host's import turn (see DeploymentRemovals). */
  whileLockedForImport<T>(
    id: string,
    turn: (inTurn: () => Promise<IfFree<T>>) => Promise<IfFree<T>>,
    work: FencedWork<T>,
  ): Promise<IfFree<T>> {
    return this.removals.whileLockedForImport(id, turn, work);
  }

  /** Whether deployment `id`'s lock is held or waited for on this host. */
  lifecycleBusy(id: string): boolean {
    return this.removals.usersHere(id) > 0;
  }

  /** How many deploys, imports, deletes, claims and settings changes of deployment `id` hold or wait for its lock here. */
  lifecycleQueue(id: string): number {
    return this.removals.usersHere(id);
  }

  /**
   * Runs `work` holding the lifecycle locks of every id of `ids` at once: no deploy, import or
   * delete of them is halfway (a backup's snapshot). Unfinished removals are left to finish later.
   */
  whileAllLocked<T>(ids: string[], work: (locked: boolean) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.removals.whileAllLocked(ids, work, signal);
  }

  /** The code of artifact `hash` (an export carries it). */
  artifactCode(hash: string): Promise<string> {
    return this.registry.artifacts.code(hash);
  }

  /** The deployment-record side of an import into deployment `id` (see {@link DeploymentImport}). */
  importInto(id: string): DeploymentImport {
    return new DeploymentImport(this.registry, this.pool, id);
  }

  /** Claims an unclaimed deployment for `developer` with its claim token. */
  async claim(
    id: string,
    developer: string,
    claimToken: unknown,
    stillAllowed?: StillAllowed,
  ): Promise<DeploymentRecord> {
    // Checked before the developer's turn and the deployment's lock as well as under them: wrong
    // tokens sent one after another queued on the lock, and held up the deployment's own deploys
    // and imports.
    authoriseClaim(await this.registry.require(id), claimToken);
    // In the developer's turn, counted once the claim is known to be valid (see owner-cap.ts).
    return this.owners.inTurn(developer, () =>
      this.removals.whileLocked(id, async (fence) => {
        await stillAllowed?.();
        const mayOwnOneMore = () => this.owners.check(developer);
        return claimDeployment(this.registry, id, { developer, claimToken, mayOwnOneMore }, fence);
      }),
    );
  }

  /**
   * Changes access settings (`restricted` and the approved emails) of deployment `record`, as the
   * caller read it and checked the right to: not of one created under its id since.
   */
  updateSettings(
    record: DeploymentRecord,
    settings: { restricted?: unknown; approved?: unknown },
    stillAllowed?: StillAllowed,
  ): Promise<DeploymentRecord> {
    return this.removals.whileLocked(record.id, async (fence) => {
      await stillAllowed?.();
      return updateSettings(this.registry, record, settings, fence);
    });
  }

  /**
   * Deletes deployment `record` (as the caller read it and checked the right to delete it) and
   * everything it stored: isolate, record, rows, and every registered deployment-scoped state
   * (objects, sessions); see {@link DeploymentRemovals.remove}.
   */
  remove(record: DeploymentRecord, stillAllowed?: StillAllowed): Promise<void> {
    return this.removals.remove(record, stillAllowed);
  }

  /** Registers state kept per deployment outside the document database, purged with each deletion. */
  purgeOnRemoval(state: DeploymentScopedState): void {
    this.removals.add(state);
  }

  /** Removes every stored bundle no deployment or deploy under way uses (hourly: what crashes left). */
  sweepArtifacts(): Promise<number> {
    return this.registry.sweepArtifacts();
  }

  /** Finishes deletions a previous run left (at the host's start), after adopting artifact uses. */
  async finishRemovals(): Promise<void> {
    await this.registry.adoptArtifactUses();
    return this.removals.finishUnfinished((id, error) => this.logs.write(unfinishedRemovalLine(id, error)));
  }

  /** Whose storage quota deployment `id`'s uploads count against (see {@link storageHolderOf}). */
  quotaOwnerOf(id: string): Promise<StorageHolder | undefined> {
    return storageHolderOf(this.registry, id);
  }

  /** The incarnation app tokens of deployment `id` must carry (see {@link currentIncarnation}). */
  incarnationOf(id: string): Promise<string | null | undefined> {
    return currentIncarnation(this.registry, id);
  }

  /** Runs a query or mutation of deployment `id` in its isolate and one transaction. */
  async call(id: string, call: Call): Promise<CallResult> {
    // Nearly every call finds its record cached: no extra turn through `require`.
    const record = this.registry.cached(id) ?? (await this.registry.require(id));
    if (call.incarnation !== undefined && (record.incarnation ?? null) !== call.incarnation)
      throw replacedError(id);
    return this.calls.call(record, call);
  }

  /** Runs custom endpoint `name` of deployment `id` for an HTTP request (see {@link CallExecutor.callEndpoint}). */
  async callEndpoint(
    id: string,
    name: string,
    request: BridgeHttpRequest,
    identity: BridgeIdentity | null,
    session?: SessionProof | null,
  ): Promise<CallResult> {
    return this.calls.callEndpoint(await this.registry.require(id), name, request, identity, session);
  }

  /** Rewrites host record `key` in a transaction of deployment `id` (see {@link rewriteHostRecord}). */
  rewriteRecord(id: string, key: Buffer, rewrite: (stored: string | null) => string | null): Promise<void> {
    return rewriteHostRecord({ db: this.db, registry: this.registry }, id, key, rewrite);
  }

  /** Upgrades a guest of deployment `id` to `account` in one transaction (see {@link upgradeGuest}). */
  async upgradeGuest(
    id: string,
    guestUserId: string,
    account: BridgeIdentity,
    retirement: GuestRetirement,
  ): Promise<{ upgraded: boolean; moved: number }> {
    const record = await this.registry.require(id);
    return upgradeGuest(this, record, guestUserId, account, retirement);
  }

  /** Stops every isolate and the checks of records' stamps; resolves once no isolate work is left in flight. */
  close(): Promise<void> {
    this.registry.close();
    return this.pool.close();
  }
}
