import { tempDatabase } from "../../test/helpers/db.js";
import { groupCommitSuite } from "../../test/helpers/group-commit-suite.js";

groupCommitSuite("classic-level", async (quota) => {
  const env = await tempDatabase(quota);
  return { db: env.db, dispose: env.dispose };
});
