import { type HostDatabase, refusedForLostLock } from "../db/index.js";
import { retryAbandoned } from "../isolates/index.js";
import type { DeploymentRegistry } from "./registry.js";

/**
 * Rewrites host record `key` in a transaction of deployment `id` (a session's sign-out), under
 * its write lock: ordered with its mutations, and announced to the other hosts by the commit.
 * `rewrite` gets the stored value and answers the new one (null: leave it); `not_found` when
 * there is no such deployment. Refused for a lost write lock (nothing written), it runs again.
 */
export async function rewriteHostRecord(
  parts: { db: HostDatabase; registry: DeploymentRegistry },
  id: string,
  key: Buffer,
  rewrite: (stored: string | null) => string | null,
): Promise<void> {
  await parts.registry.require(id);
  const database = await parts.db.deployment(id);
  const attempt = () =>
    database.mutate(
      async (tx) => {
        const next = rewrite(await tx.readKey(key));
        if (next !== null) tx.writeRecord(key, next);
      },
      { handler: "auth.signOut", now: Date.now() },
    );
  await retryAbandoned(() => {}, attempt, refusedForLostLock);
}
