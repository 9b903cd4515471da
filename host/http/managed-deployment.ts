import type { Context } from "koa";
import { PlatformError } from "../../sdk/values/index.js";
import { checkManage } from "../access/index.js";
import { checkDeploymentId, type DeploymentRecord, type DeploymentService } from "../deployments/index.js";
import { type Principal, principalOf } from "./principal.js";

/** The deployment of the path, which the caller must manage (the owner, or the operator). */
export async function managedDeployment(
  ctx: Context,
  deployments: DeploymentService,
): Promise<DeploymentRecord> {
  const record = await deployments.require(checkDeploymentId(ctx.params.id));
  checkManage(principalOf(ctx), record);
  return record;
}

/**
 * Refuses to act on `record` when, by now, it was deleted (and perhaps created again under its id
 * by someone else): called after a route read its body, which a client may take minutes to send
 * after the access check passed.
 */
export async function checkStillSame(
  deployments: DeploymentService,
  record: DeploymentRecord,
): Promise<void> {
  const now = await deployments.get(record.id);
  if (!now || now.incarnation !== record.incarnation)
    throw new PlatformError("not_found", `Deployment ${record.id} was deleted.`);
}

/** How a deployment's log names the person acting from the dashboard. */
export function actorLabel(who: Principal): string {
  return who.kind === "admin" ? "operator" : `developer ${who.developer.id}`;
}
