/**
 * Child process for the deletion crash test: opens a host's data folder, starts deleting
 * deployment `<id>` and stops midway (after the rows, before the objects and sessions), printing
 * `midway`; the test then kills it with SIGKILL.
 */
import { join } from "node:path";
import { AuthService } from "../../host/auth/index.js";
import { HostDatabase } from "../../host/db/index.js";
import { DeploymentService, LogHub } from "../../host/deployments/index.js";
import { FsBlobStore, ObjectService } from "../../host/storage/index.js";

const [dir, id] = process.argv.slice(2) as [string, string];
const db = await HostDatabase.open(join(dir, "db"));
const deployments = new DeploymentService(db, new LogHub(false, false));
deployments.purgeOnRemoval({
  purgeDeployment: () => {
    process.stdout.write("midway\n");
    setInterval(() => {}, 1000);
    return new Promise<void>(() => {});
  },
});
const blobs = await FsBlobStore.open(join(dir, "blobs"));
deployments.purgeOnRemoval(new ObjectService(db, blobs, (name) => deployments.quotaOwnerOf(name)));
deployments.purgeOnRemoval(await AuthService.open(db, (name) => deployments.incarnationOf(name)));
await deployments.remove(await deployments.require(id));
