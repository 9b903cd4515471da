import type { Context } from "koa";
import { PlatformError } from "../../sdk/values/index.js";
import { checkManage, type OperatorCaller } from "../access/index.js";
import type { DeployGuard, DeploymentRecord, StillAllowed } from "../deployments/index.js";
import { checkStillSpokenFor } from "./body.js";

/**
 * The check a deploy, delete, claim or settings change of request `ctx` makes once it holds its
 * deployment's lock: refused `401` when the request's developer token was replaced, or its
 * dashboard session ended, while it waited there (behind another's long migration, say).
 */
export function stillSpokenFor(ctx: Context): StillAllowed {
  return () => checkStillSpokenFor(ctx);
}

/** A deploy guard for creating `id`: refused when a deployment of that id exists by then. */
export function createsOnly(id: string): DeployGuard {
  return (previous) => {
    if (previous)
      throw new PlatformError(
        "conflict",
        `Deployment ${id} was created by someone else while this deploy was on its way; choose another id.`,
      );
  };
}

/**
 * A deploy guard for replacing `existing`, which `who` may manage: refused when by then that
 * deployment was deleted (and perhaps created again by someone else under its id).
 */
export function replacesOnly(who: OperatorCaller, existing: DeploymentRecord): DeployGuard {
  return (previous) => {
    if (!previous || previous.incarnation !== existing.incarnation)
      throw new PlatformError(
        "conflict",
        `Deployment ${existing.id} was deleted while this deploy was on its way; deploy again to create it.`,
      );
    checkManage(who, previous);
  };
}
