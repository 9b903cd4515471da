import { LIMITS } from "../../sdk/protocol/index.js";
import { PlatformError } from "../../sdk/values/index.js";
import type { Principal } from "./principal.js";
import { RequestQuota } from "./request-quota.js";

/**
 * Deploys started by each developer on this host, at most `LIMITS.deploysPerMinute` a minute,
 * failed ones too (the operator's are not limited): each compiles and checks a bundle and may
 * migrate the deployment's data, work the host does for no tenant's request quota.
 */
export class DeployStarts {
  private readonly perMinute = LIMITS.deploysPerMinute;
  private readonly quota = new RequestQuota({ burst: this.perMinute, perSecond: this.perMinute / 60 });

  /** `now`: the clock (ms; tests give their own). */
  constructor(private readonly now: () => number = Date.now) {}

  /** Counts a deploy `who` starts, or refuses it (`429 limit_exceeded`) past the limit. */
  charge(who: Principal): void {
    if (who.kind !== "developer" || this.quota.tryTake(who.developer.id, 1, this.now())) return;
    const seconds = this.quota.retryAfterSeconds(who.developer.id, this.now());
    throw new PlatformError(
      "limit_exceeded",
      `Too many deploys: a developer may start ${this.perMinute} a minute on this host, failed ones too. Retry in ${seconds} s.`,
      { retryAfterSeconds: seconds },
    );
  }
}
