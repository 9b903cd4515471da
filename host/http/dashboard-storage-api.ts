import type Router from "@koa/router";
import { PlatformError } from "../../sdk/values/index.js";
import type { DeploymentService } from "../deployments/index.js";
import { checkObjectId, type ObjectService, type Visibility } from "../storage/index.js";
import { managedDeployment } from "./managed-deployment.js";
import { listingJson, sendObject } from "./storage-routes.js";

function visibilityOf(value: unknown): Visibility {
  if (value === "public" || value === "private") return value;
  throw new PlatformError("not_found", "No such object.");
}

/**
 * The dashboard's storage routes on the operator API (also usable with a bearer token): the
 * newest files of a deployment as the inspect route lists them, and one file's bytes for its owner
 * or the operator. A download carries exactly the headers an app download carries (sandboxing
 * CSP, `nosniff`, attachment for anything a browser could run), and is never cached: the owner
 * may read private files, as an export would give them anyway. Deletes use
 * `DELETE /v1/me/deploys/<id>/storage/<visibility>/<object>`.
 */
export function registerStorageRoutes(
  router: Router,
  deployments: DeploymentService,
  objects: ObjectService,
): void {
  router.get("/deploys/:id/storage", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    ctx.body = listingJson(await objects.list(record), objects.limits.listing);
  });
  router.get("/deploys/:id/storage/:visibility/:object", async (ctx) => {
    const record = await managedDeployment(ctx, deployments);
    const visibility = visibilityOf(ctx.params.visibility);
    const object = await objects.record(record, visibility, checkObjectId(ctx.params.object as string));
    if (!object) throw new PlatformError("not_found", "No such object.");
    await sendObject(ctx, objects, object, "private, no-store");
  });
}
