/**
 * Child process for the import crash tests: opens a host's data folder, starts importing the
 * archive `<zip>` into deployment `<id>` (with `--replace` when `<replace>` is "replace") and stops
 * at `<stage>`, printing `midway`; the test then kills it with SIGKILL. Stages, in the order an
 * import runs them:
 * - `mid-objects`: a marker names the archive's objects and some of their bytes are written;
 * - `before-commit`: every byte is written; the one batch (rows, indexes, records) is not.
 */
import { join } from "node:path";
import { HostDatabase, TenantDatabase } from "../../host/db/index.js";
import { DeploymentService, LogHub } from "../../host/deployments/index.js";
import { FsBlobStore, ObjectService, ObjectTransfer } from "../../host/storage/index.js";
import { DeploymentTransfer, UploadFolder } from "../../host/transfer/index.js";

const [dir, zip, id, stage, replace] = process.argv.slice(2) as [string, string, string, string, string?];
const db = await HostDatabase.open(join(dir, "db"));
const deployments = new DeploymentService(db, new LogHub(false, false));
const blobs = await FsBlobStore.open(join(dir, "blobs"));
const objects = new ObjectService(db, blobs, (name) => deployments.quotaOwnerOf(name));
deployments.purgeOnRemoval(objects);

function stopHere(): Promise<never> {
  process.stdout.write("midway\n");
  setInterval(() => {}, 1000);
  return new Promise<never>(() => {});
}

if (stage === "before-commit") TenantDatabase.prototype.replaceData = stopHere;
if (stage === "mid-objects") {
  const stageBytes = ObjectTransfer.prototype.stage;
  let staged = 0;
  ObjectTransfer.prototype.stage = function (this: ObjectTransfer, ...args) {
    if (++staged === 2) return stopHere();
    return stageBytes.apply(this, args);
  };
}
const uploads = new UploadFolder(join(dir, "import-uploads"));
await new DeploymentTransfer(db, deployments, objects, uploads).import({
  id,
  archive: zip,
  replace: replace === "replace",
  authorise: async () => undefined,
});
process.stdout.write("finished\n");
process.exit(0);
