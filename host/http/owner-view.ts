import type { Developers } from "../auth/index.js";
import { type DeploymentRecord, publicView } from "../deployments/index.js";

/** A deployment as the operator API shows it, with its owner as people know them. */
export type OwnedView = ReturnType<typeof publicView> & {
  /** The owning developer's name and email (from `POST /v1/developers`), when they gave one. */
  ownerName: string | null;
  ownerEmail: string | null;
};

/**
 * Deployments with their owners' names and emails next to the owner's id, so a list reads as
 * people rather than `dev_...` ids. Each owner is looked up once however many deployments they own.
 */
export async function withOwners(records: DeploymentRecord[], developers: Developers): Promise<OwnedView[]> {
  const owners = new Map<string, Promise<{ name?: string; email?: string } | undefined>>();
  const ownerOf = (id: string) => {
    let found = owners.get(id);
    if (!found) {
      found = developers.get(id);
      owners.set(id, found);
    }
    return found;
  };
  return Promise.all(
    records.map(async (record) => {
      const owner = record.owner === null ? undefined : await ownerOf(record.owner);
      return Object.assign(publicView(record), {
        ownerName: owner?.name ?? null,
        ownerEmail: owner?.email ?? null,
      });
    }),
  );
}
