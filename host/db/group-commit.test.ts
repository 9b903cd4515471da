import { tempDatabase } from "../../test/helpers/db.js";
import { groupCommitSuite } from "../../test/helpers/group-commit-suite.js";

groupCommitSuite("classic-level", async () => {
  const env = await tempDatabase();
  return { db: env.db, dispose: env.dispose };
});
