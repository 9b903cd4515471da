import { afterEach, beforeEach, expect, it } from "vitest";
import { capsule, string, table } from "../../sdk/server/index.js";
import { tempDatabase, typedDb } from "../../test/helpers/db.js";
import { readDataHead, tableRows } from "./deployment-data.js";
import type { HostMessage } from "./host-message.js";
import type { TenantDatabase } from "./tenant-database.js";

const app = capsule({ schema: { notes: table({ text: string() }) } });

let env: Awaited<ReturnType<typeof tempDatabase>>;
let heard: HostMessage[];
beforeEach(async () => {
  env = await tempDatabase();
  heard = [];
  env.db.onAnnouncement((message) => heard.push(message));
});
afterEach(() => env.dispose());

/** Deploys `app`'s schema to deployment `id` as a deploy of incarnation `incarnation` does. */
async function deployed(id: string, incarnation?: string): Promise<TenantDatabase> {
  const deployment = await env.db.deployment(id);
  await deployment.migrate(app.declaration.schema, undefined, {
    switching: { operations: [], incarnation, switched() {} },
  });
  return deployment;
}

const texts = (deployment: TenantDatabase, incarnation?: string | null) =>
  typedDb(deployment, app)
    .read(async (db) => (await db.notes.collect()).map((note) => note.text), { incarnation })
    .then((result) => result.value);

const add = (deployment: TenantDatabase, text: string, incarnation?: string | null) =>
  typedDb(deployment, app).write((db) => db.notes.insert({ text }), { incarnation });

it("refuses another incarnation's code the data of a deployment created again under its id", async () => {
  await add(await deployed("reused", "first"), "first's", "first");
  await env.db.dropDeployment("reused");
  const again = await deployed("reused", "second");
  await add(again, "second's", "second");
  // The first deployment's code, as a host that missed the deletion still runs it.
  await expect(texts(again, "first")).rejects.toMatchObject({ code: "not_found" });
  await expect(add(again, "first's again", "first")).rejects.toMatchObject({ code: "not_found" });
  // Code of a deployment created before incarnations existed has none: not this one's either.
  await expect(texts(again, null)).rejects.toMatchObject({ code: "not_found" });
  // Each refusal tells this host to read the deployment's record again.
  expect(heard).toContainEqual({ type: "deployment", id: "reused" });
  expect(await texts(again, "second")).toEqual(["second's"]);
  // The host's own work names no incarnation.
  expect(await texts(again)).toEqual(["second's"]);
  // A handler that reads nothing is not refused: it was given nothing.
  expect((await typedDb(again, app).read(async () => "nothing", { incarnation: "first" })).value).toBe(
    "nothing",
  );
});

it("serves any incarnation's code the data deployed before incarnations were stored, until a deploy marks it", async () => {
  const old = await deployed("unmarked");
  await add(old, "kept", "any");
  expect(await texts(old, "other")).toEqual(["kept"]);
  await deployed("unmarked", "any");
  expect(await texts(old, "any")).toEqual(["kept"]);
  await expect(add(old, "refused", "other")).rejects.toMatchObject({ code: "not_found" });
});

it("marks the data an import replaces as the incarnation of the record it commits with", async () => {
  const source = await deployed("source", "source's");
  await add(source, "imported", "source's");
  const snapshot = await env.db.store.snapshot();
  const head = await readDataHead(snapshot, "source");
  const rows: string[] = [];
  for await (const batch of tableRows(snapshot, "source", "notes")) rows.push(...batch);
  await snapshot.close();
  const target = await deployed("target", "before");
  await target.replaceData({ ...head, tables: new Map([["notes", rows]]) }, async () => [], {
    incarnation: "after",
  });
  expect(await texts(target, "after")).toEqual(["imported"]);
  await expect(texts(target, "before")).rejects.toMatchObject({ code: "not_found" });
  await expect(add(target, "refused", "before")).rejects.toMatchObject({ code: "not_found" });
});
