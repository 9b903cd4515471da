import type { Context } from "koa";
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

/** How a deployment's log names the person acting from the dashboard. */
export function actorLabel(who: Principal): string {
  return who.kind === "admin" ? "operator" : `developer ${who.developer.id}`;
}
