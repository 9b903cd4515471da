import type { KnownDeployments } from "../isolates/index.js";
import type { StorageHolder } from "../storage/index.js";
import type { ClientFileStore, FoundClientFile } from "./client-files.js";
import { storageQuotaOwner } from "./records.js";
import type { DeploymentRegistry } from "./registry.js";

/**
 * What the pool reads of the registry's cached records (it asks, never keeps; see
 * known-deployments.ts). A deployment created anew gets a new incarnation, so caches scoped by it
 * never reach a successor.
 */
export function knownDeployments(registry: DeploymentRegistry): KnownDeployments {
  return {
    scopeOf: (id: string) => {
      const incarnation = registry.cached(id)?.incarnation;
      return incarnation === undefined ? undefined : `${id}/${incarnation}`;
    },
    artifactOf: (id: string) => registry.cached(id)?.artifact,
    ownerOf: (id: string) => registry.cached(id)?.owner,
  };
}

/**
 * The file at `path` (exact, as stored) of the web client deployment `id` serves, or undefined;
 * its bytes only when `withBytes` (a `HEAD` or a `304` needs none), kept in memory as its
 * developer's. When the version its cached record names is gone (another host deployed since,
 * and its announcement has not arrived), the record is read again once, so a redeploy never
 * shows a missing file in between.
 */
export async function findClientFile(
  registry: DeploymentRegistry,
  clientFiles: ClientFileStore,
  id: string,
  path: string,
  withBytes: boolean,
): Promise<FoundClientFile | undefined> {
  for (const read of [async () => registry.cached(id) ?? registry.get(id), () => registry.reload(id)]) {
    const record = await read();
    if (!record?.client) return undefined;
    const found = await clientFiles.lookup(id, record.client, path, withBytes, storageQuotaOwner(record));
    if (found !== "missing") return found;
  }
  return undefined;
}

/**
 * Whose storage quota deployment `id`'s uploads count against, read from the store (a cached
 * record may be stale): its owner, `dev:<id>` while unclaimed, and which incarnation of the id
 * it is; undefined once it is deleted.
 */
export async function storageHolderOf(
  registry: DeploymentRegistry,
  id: string,
): Promise<StorageHolder | undefined> {
  const record = await registry.stored(id);
  return record
    ? { quotaOwner: storageQuotaOwner(record), incarnation: record.incarnation ?? null }
    : undefined;
}

/**
 * The incarnation app tokens of deployment `id` must carry: a string, null for a deployment
 * created before incarnations existed, undefined when there is no such deployment.
 */
export async function currentIncarnation(
  registry: DeploymentRegistry,
  id: string,
): Promise<string | null | undefined> {
  const record = registry.cached(id) ?? (await registry.get(id));
  return record ? (record.incarnation ?? null) : undefined;
}
