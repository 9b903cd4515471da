import { afterEach, beforeEach, expect, it } from "vitest";
import { capsule, string, table } from "../../sdk/server/index.js";
import { tempDatabase, typedDb } from "../../test/helpers/db.js";
import { deferred } from "../../test/helpers/deferred.js";
import { afterPrefix } from "./codec.js";
import { deploymentPrefixes } from "./keys.js";
import { collect } from "./kv/index.js";

const app = capsule({ schema: { notes: table({ text: string() }).index("by_text", ["text"]) } });

let env: Awaited<ReturnType<typeof tempDatabase>>;
beforeEach(async () => {
  env = await tempDatabase();
});
afterEach(() => env.dispose());

it("lets a write holding the lock finish, then refuses the writes queued behind a drop", async () => {
  const deployment = await env.db.deployment("gone");
  await deployment.migrate(app.declaration.schema);
  const t = typedDb(deployment, app);
  const gate = deferred();
  const running = deferred();
  const first = t.write(async (db) => {
    await db.notes.insert({ text: "before" });
    running.resolve();
    await gate.promise;
  });
  await running.promise;
  const dropped = env.db.dropDeployment("gone");
  const queued = t.write((db) => db.notes.insert({ text: "after" }));
  gate.resolve();
  await first;
  await dropped;
  await expect(queued).rejects.toMatchObject({ code: "not_found" });
  for (const prefix of deploymentPrefixes("gone"))
    expect(await collect(env.db.store.iterate({ gte: prefix, lt: afterPrefix(prefix) }))).toEqual([]);
  // A new deployment under the same id starts empty.
  const again = await env.db.deployment("gone");
  await again.migrate(app.declaration.schema);
  expect((await typedDb(again, app).read((db) => db.notes.collect())).value).toEqual([]);
});
