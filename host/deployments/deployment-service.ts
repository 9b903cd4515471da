import type { BridgeHttpRequest, BridgeIdentity } from "../../sdk/protocol/index.js";
import type { HostDatabase, MigrationProgress } from "../db/index.js";
import { IsolatePool, type PoolOptions } from "../isolates/index.js";
import { type Call, CallExecutor, type CallResult } from "./call-execution.js";
import { type DeployInput, type DeployResult, deploy } from "./deploy-pipeline.js";
import { type GuestRetirement, upgradeGuest } from "./guest-upgrade.js";
import type { LogHub } from "./log-hub.js";
import type { DeploymentRecord } from "./records.js";
import { DeploymentRegistry } from "./registry.js";
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

  constructor(
    readonly db: HostDatabase,
    /** Every handler's `ctx.log` lines. */
    readonly logs: LogHub,
    poolOptions: Partial<PoolOptions> = {},
  ) {
    // Another host deleted a deployment: stop its isolate and forget its loaded state.
    this.registry = new DeploymentRegistry(db, (id) => {
      this.pool.remove(id);
      db.forget(id);
    });
    this.pool = new IsolatePool((hash) => this.registry.artifactCode(hash), poolOptions);
    this.calls = new CallExecutor(db, this.pool, logs);
  }

  /** The deployment `id`, or undefined. */
  get(id: string): Promise<DeploymentRecord | undefined> {
    return this.registry.get(id);
  }

  /** The deployment `id`, or `not_found`. */
  require(id: string): Promise<DeploymentRecord> {
    return this.registry.require(id);
  }

  /** Every deployment. */
  list(): Promise<DeploymentRecord[]> {
    return this.registry.list();
  }

  /** Deploys `input` as deployment `id`; see {@link deploy} for the steps and what a failure keeps. */
  deploy(
    id: string,
    input: DeployInput,
    onProgress?: (progress: MigrationProgress) => void,
  ): Promise<DeployResult> {
    return deploy({ registry: this.registry, pool: this.pool, db: this.db }, id, input, onProgress);
  }

  /** Claims an unclaimed deployment for `developer` with its claim token. */
  claim(id: string, developer: string, claimToken: unknown): Promise<DeploymentRecord> {
    return claimDeployment(this.registry, id, developer, claimToken);
  }

  /** Changes access settings: `restricted` and the approved emails. */
  updateSettings(
    id: string,
    settings: { restricted?: unknown; approved?: unknown },
  ): Promise<DeploymentRecord> {
    return updateSettings(this.registry, id, settings);
  }

  /** Deletes a deployment: its isolate, record and every row. */
  async remove(id: string): Promise<void> {
    await this.registry.require(id);
    this.pool.remove(id);
    await this.registry.delete(id);
    await this.db.dropDeployment(id);
    await this.registry.announce(id);
  }

  /** Runs a query or mutation of deployment `id` in its isolate and one transaction. */
  async call(id: string, call: Call): Promise<CallResult> {
    // Nearly every call finds its record cached: no extra turn through `require`.
    const record = this.registry.cached(id) ?? (await this.registry.require(id));
    return this.calls.call(record, call);
  }

  /** Runs custom endpoint `name` of deployment `id` for an HTTP request (see {@link CallExecutor.callEndpoint}). */
  async callEndpoint(
    id: string,
    name: string,
    request: BridgeHttpRequest & { bodyText: string },
    identity: BridgeIdentity | null,
  ): Promise<CallResult> {
    return this.calls.callEndpoint(await this.registry.require(id), name, request, identity);
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

  /** Stops every isolate. */
  close(): void {
    this.pool.close();
  }
}
