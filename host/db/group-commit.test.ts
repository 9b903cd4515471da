import { expect, it } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import { deferred } from "../../test/helpers/deferred.js";
import { groupCommitSuite, withCounter } from "../../test/helpers/group-commit-suite.js";

groupCommitSuite("classic-level", async (quota) => {
  const env = await tempDatabase(quota);
  return { db: env.db, dispose: env.dispose };
});

it("answers each member of a group within its bound while a commit before its own does not land", async () => {
  const env = await tempDatabase({ mutationWaitMs: 300 });
  try {
    const deployment = await env.db.deployment("early");
    await withCounter(deployment);
    // The group's first commit does not come back until released (a disk that stalls).
    const commitWrites = deployment.commitWrites.bind(deployment);
    const stalled = deferred();
    let commits = 0;
    deployment.commitWrites = async (...args) => {
      if (++commits === 1) await stalled.promise;
      return commitWrites(...args);
    };
    const early = deployment.mutate((tx) => tx.insert("items", { n: 1 }));
    // Runs past the group's early commit (EARLY_COMMIT_MS): the first member is committed alone.
    const late = deployment.mutate(async (tx) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return tx.insert("items", { n: 2 });
    });
    for (const outcome of await Promise.allSettled([early, late])) {
      expect(outcome.status).toBe("rejected");
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: "unavailable" });
      expect((outcome as PromiseRejectedResult).reason.message).toContain("may or may not have been written");
    }
    // Both land once the commit goes on, as the message warned they might: the next mutation,
    // which waits for the write lock their group holds, is the third.
    stalled.resolve();
    await deployment.mutate((tx) => tx.insert("items", { n: 3 }));
    const { value } = await deployment.query(async (tx) =>
      tx.query({ table: "items", index: "by_creation", range: [], order: "asc" }, { kind: "count" }),
    );
    expect(value).toEqual({ kind: "count", count: 3 });
  } finally {
    await env.dispose();
  }
});
