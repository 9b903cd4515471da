import type { RecordStore } from "../db/index.js";
import type { DeploymentRecord } from "./records.js";

/**
 * Every deployment, in id order: their ids read from the store, each record from `cached`, or
 * read alone (not kept: a listing does not fill the cache with every deployment of the host). A
 * record holds its capsule's whole declaration (up to 2 Mi characters): parsing every one at once
 * on each listing (a developer's `GET /v1/me`, a new deployment's count) held every tenant's
 * calls for seconds when one developer's records were large.
 */
export async function listRecords(
  records: RecordStore<DeploymentRecord>,
  cached: (id: string) => DeploymentRecord | undefined,
): Promise<DeploymentRecord[]> {
  const found: DeploymentRecord[] = [];
  for await (const ids of records.idPages())
    for (const id of ids) {
      const record = cached(id) ?? (await records.get(id));
      if (record) found.push(record);
    }
  return found;
}
