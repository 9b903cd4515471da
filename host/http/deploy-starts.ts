import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { OperatorCaller } from "../access/index.js";
import { RequestQuota } from "./request-quota.js";

/**
 * Deploys and settings changes started by each developer on this host, at most
 * `LIMITS.deploysPerMinute` a minute together, failed ones too (the operator's are not limited):
 * a deploy compiles and checks a bundle and may migrate the deployment's data, and each of them
 * is announced to every host sharing the database, which runs the deployment's live queries
 * again: work the hosts do for no tenant's request quota.
 */
export class DeployStarts {
  private readonly perMinute = LIMITS.deploysPerMinute;
  private readonly quota = new RequestQuota({ burst: this.perMinute, perSecond: this.perMinute / 60 });

  /** `now`: the clock (ms; tests give their own). */
  constructor(private readonly now: () => number = Date.now) {}

  /** Counts a deploy, settings change, claim or import `who` starts, or refuses it (`429 limit_exceeded`) past the limit. */
  charge(who: OperatorCaller): void {
    if (who.kind !== "developer" || this.quota.tryTake(who.developer.id, 1, this.now())) return;
    const seconds = this.quota.retryAfterSeconds(who.developer.id, this.now());
    throw new PlatformError(
      "limit_exceeded",
      `Too many deploys and settings changes (claims and imports too): a developer may start ${this.perMinute} a minute on this host, failed ones too. Retry in ${seconds} s.`,
      { retryAfterSeconds: seconds },
    );
  }
}
