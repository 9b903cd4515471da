import { PlatformError } from "../../sdk/values/index.js";
import { authoriseClaim } from "../access/index.js";
import { normaliseEmail } from "../auth/index.js";
import type { DeploymentRecord } from "./records.js";
import type { DeploymentRegistry } from "./registry.js";

/**
 * Claims an unclaimed deployment for `developer` with its claim token (see the claim rule in
 * `host/access`); the token is spent: its hash leaves the record.
 */
export async function claimDeployment(
  registry: DeploymentRegistry,
  id: string,
  developer: string,
  claimToken: unknown,
  mayOwnOneMore: () => Promise<void>,
): Promise<DeploymentRecord> {
  const record = await registry.require(id);
  authoriseClaim(record, claimToken);
  await mayOwnOneMore();
  const { claimTokenHash: _used, ...rest } = record;
  return registry.save(Object.assign(rest, { owner: developer, updatedAt: Date.now() }));
}

/** Changes access settings: `restricted` and the approved emails (stored lower case, once each). */
export async function updateSettings(
  registry: DeploymentRegistry,
  id: string,
  settings: { restricted?: unknown; approved?: unknown },
): Promise<DeploymentRecord> {
  const record = await registry.require(id);
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
  return registry.save(next);
}
