/**
 * Child process for the deletion crash tests: opens a host's data folder, starts deleting
 * deployment `<id>` and stops at `<stage>`, printing `midway`; the test then kills it with SIGKILL.
 * Stages, in the order a removal runs them:
 * - `before-rows`: the record is gone and the removal marked; rows, objects and sessions remain;
 * - `after-rows`: the rows are gone; objects and sessions remain;
 * - `after-objects`: the objects are gone; sessions remain;
 * - `after-purges`: everything is gone but the removal's marker.
 */
import { join } from "node:path";
import { AuthService } from "../../host/auth/index.js";
import { HostDatabase } from "../../host/db/index.js";
import { type DeploymentScopedState, DeploymentService, LogHub } from "../../host/deployments/index.js";
import { FsBlobStore, ObjectService } from "../../host/storage/index.js";

const [dir, id, stage = "after-rows"] = process.argv.slice(2) as [string, string, string?];
const db = await HostDatabase.open(join(dir, "db"));
const deployments = new DeploymentService(db, new LogHub(false, false));

function stopHere(): Promise<never> {
  process.stdout.write("midway\n");
  setInterval(() => {}, 1000);
  return new Promise<never>(() => {});
}
const stopping: DeploymentScopedState = { purgeDeployment: stopHere };

if (stage === "before-rows") db.dropDeployment = stopHere;
if (stage === "after-rows") deployments.purgeOnRemoval(stopping);
const blobs = await FsBlobStore.open(join(dir, "blobs"));
deployments.purgeOnRemoval(new ObjectService(db, blobs, (name) => deployments.quotaOwnerOf(name)));
if (stage === "after-objects") deployments.purgeOnRemoval(stopping);
deployments.purgeOnRemoval(await AuthService.open(db, (name) => deployments.incarnationOf(name)));
if (stage === "after-purges") deployments.purgeOnRemoval(stopping);
await deployments.remove(await deployments.require(id));
