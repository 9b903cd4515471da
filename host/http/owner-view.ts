import { PlatformError } from "../../sdk/values/index.js";
import type { Developers } from "../auth/index.js";
import { type DeploymentRecord, publicView, summaryView } from "../deployments/index.js";

/** A deployment as the operator API shows it (`view`), with its owner as people know them. */
export type OwnedView<View> = View & {
  /** The owning developer's name and email (from `POST /v1/developers`), when they gave one. */
  ownerName: string | null;
  ownerEmail: string | null;
};

/**
 * Deployments with their owners' names and emails next to the owner's id, so a list reads as
 * people rather than `dev_...` ids. Each owner is looked up once however many deployments they own.
 */
export async function withOwners<View extends object>(
  records: DeploymentRecord[],
  developers: Developers,
  view: (record: DeploymentRecord) => View,
): Promise<Array<OwnedView<View>>> {
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
      return Object.assign(view(record), {
        ownerName: owner?.name ?? null,
        ownerEmail: owner?.email ?? null,
      });
    }),
  );
}

/**
 * What `GET /v1/deploys?view=<view>` shows of each deployment: absent, everything
 * ({@link publicView}); `summary`, what a list for people needs ({@link summaryView}).
 */
export function listView(
  view: unknown,
): (record: DeploymentRecord) => ReturnType<typeof publicView> | ReturnType<typeof summaryView> {
  if (view === undefined) return publicView;
  if (view === "summary") return summaryView;
  throw new PlatformError(
    "bad_request",
    "view must be summary (the fields a list shows), or absent for every field of each deployment.",
  );
}
