import { PlatformError } from "../../sdk/values/index.js";
import { NamedLocks } from "../db/index.js";
import type { DeploymentRecord } from "./records.js";

/**
 * How many deployments one developer may own (`LIMITS.deploymentsPerDeveloper` unless the host
 * says otherwise). Every deployment holds a database of its own, up to its row-bytes quota, and
 * the host's memory and connections for its isolate and reads: without a bound, one developer's
 * token could create deployments until the disk every tenant's data is on is full.
 *
 * A developer's additions (a create, a claim, an import into a new id) run one at a time on a
 * host, each after counting what the developer owns, so concurrent requests to one host cannot
 * pass the bound together. Hosts sharing a database count alone: each may add one more at the
 * same moment, so the bound holds to within the number of hosts. The operator adds deployments
 * for a developer without this check.
 */
export class OwnerCap {
  /** Each developer's additions in turn (a lock per developer adding one now). */
  private readonly turns = new NamedLocks();

  constructor(
    private readonly list: () => Promise<DeploymentRecord[]>,
    readonly max: number,
  ) {}

  /**
   * Runs `work`, which may give `owner` one more deployment, when `owner` owns fewer than
   * {@link max}; `quota_exceeded` otherwise, naming what to do. Without an owner (the operator
   * adds it), `work` runs at once.
   */
  adding<T>(owner: string | undefined, work: () => Promise<T>): Promise<T> {
    return this.inTurn(owner, async () => {
      if (owner !== undefined) await this.check(owner);
      return work();
    });
  }

  /**
   * Runs `work` in `owner`'s turn on this host, for an addition that calls {@link check} itself
   * where it learns that it adds one (under the deployment's lock: a claim, an import). Without an
   * owner, at once.
   */
  inTurn<T>(owner: string | undefined, work: () => Promise<T>): Promise<T> {
    if (owner === undefined) return work();
    return this.turns.run(owner, work);
  }

  /** Throws `quota_exceeded` when `owner` owns {@link max} deployments or more now. */
  async check(owner: string): Promise<void> {
    const owned = (await this.list()).filter((record) => record.owner === owner).length;
    if (owned >= this.max)
      throw new PlatformError(
        "quota_exceeded",
        `Developer ${owner} owns ${owned} deployments, the most one developer may own (${this.max}). Delete one you no longer need (its Settings page in the dashboard, or DELETE /v1/deploys/<id>), or ask the operator to create this one for you.`,
      );
  }
}
