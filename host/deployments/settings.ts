import { PlatformError } from "../../sdk/values/index.js";
import { authoriseClaim } from "../access/index.js";
import { normaliseEmail } from "../auth/index.js";
import type { LockFence } from "../db/index.js";
import type { DeploymentRecord } from "./records.js";
import type { DeploymentRegistry } from "./registry.js";

/**
 * Claims an unclaimed deployment for `developer` with its claim token (see the claim rule in
 * `host/access`); the token is spent: its hash leaves the record. `fence`: the deployment's
 * lifecycle lock's, held by the caller (see `DeploymentRemovals.whileLocked`).
 */
export async function claimDeployment(
  registry: DeploymentRegistry,
  id: string,
  claim: { developer: string; claimToken: unknown; mayOwnOneMore: () => Promise<void> },
  fence?: LockFence,
): Promise<DeploymentRecord> {
  const { developer, claimToken, mayOwnOneMore } = claim;
  const record = await registry.require(id);
  authoriseClaim(record, claimToken);
  await mayOwnOneMore();
  const { claimTokenHash: _used, ...rest } = record;
  return registry.save(Object.assign(rest, { owner: developer, updatedAt: Date.now() }), fence);
}

/**
 * Changes access settings: `restricted` and the approved emails (stored lower case, once each), of
 * deployment `checked` as its caller read it and checked the right to change it: a deployment
 * created under its id since (the caller's was deleted while its request arrived) is another's,
 * and answers `not_found`. `fence`: the lifecycle lock's, as {@link claimDeployment}'s.
 */
export async function updateSettings(
  registry: DeploymentRegistry,
  checked: DeploymentRecord,
  settings: { restricted?: unknown; approved?: unknown },
  fence?: LockFence,
): Promise<DeploymentRecord> {
  const record = await registry.require(checked.id);
  if (record.incarnation !== checked.incarnation)
    throw new PlatformError("not_found", `Deployment ${checked.id} was deleted.`);
  const next = Object.assign({}, record, { updatedAt: Date.now() });
  if (settings.restricted !== undefined) {
    if (typeof settings.restricted !== "boolean")
      throw new PlatformError("bad_request", "restricted must be true or false.");
    next.restricted = settings.restricted;
  }
  if (settings.approved !== undefined) {
    if (!Array.isArray(settings.approved))
      throw new PlatformError("bad_request", "approved must be a list of email addresses.");
    next.approved = [...new Set(settings.approved.map((email) => normaliseEmail(email)))];
  }
  return registry.save(next, fence);
}
