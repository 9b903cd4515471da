/**
 * Another host's announcement makes this one read the deployment's record again. A read that
 * fails then (the database out of connections, a failover) must neither end the host (an
 * unhandled rejection does) nor leave the change unheard: it is tried again until it reads.
 */
import { afterEach, expect, it } from "vitest";
import { until } from "../../test/helpers/arrivals.js";
import { storeOfAHost } from "../../test/helpers/store-of-a-host.js";
import { HostDatabase } from "../db/index.js";
import { DeploymentRegistry } from "./registry.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A registry on {@link storeOfAHost}'s store, with the ids it was told changed. */
async function registryOfAHost() {
  const host = await storeOfAHost(cleanups);
  const db = await HostDatabase.openStore(host.store);
  const changed: string[] = [];
  const registry = new DeploymentRegistry(
    db,
    () => {},
    (id) => changed.push(id),
  );
  return { ...host, db, registry, changed };
}

it("reads a deployment again after a failed read of another host's announcement, and tells what became of it", async () => {
  const { store, announce, failNext } = await storeOfAHost(cleanups);
  const db = await HostDatabase.openStore(store);
  const gone: string[] = [];
  const changed: string[] = [];
  new DeploymentRegistry(
    db,
    (id) => gone.push(id),
    (id) => changed.push(id),
  );
  const records = db.records<Record<string, unknown>>("deployments");
  await records.put("app", { id: "app", incarnation: "first" });
  failNext(2);
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  await until(async () => changed.length === 1);
  expect(gone).toEqual([]);
  // Deleted on the other host: heard once the read goes through.
  await records.delete("app");
  failNext(1);
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  await until(async () => gone.length === 1);
  expect(gone).toEqual(["app"]);
});

it("knows a deployment's owner while another host's announcement is read, and keeps the record it read", async () => {
  // A deployment whose record an announcement dropped counted as a developer of its own: another
  // host's flood of settings changes let one developer's deployments take more than its share.
  const { db, registry, changed, announce, failNext } = await registryOfAHost();
  await db.records<Record<string, unknown>>("deployments").put("app", { id: "app", owner: "dev-1" });
  expect((await registry.get("app"))?.owner).toBe("dev-1");
  expect(registry.ownerOf("app")).toBe("dev-1");
  failNext(1);
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  expect(registry.cached("app")).toBeUndefined();
  expect(registry.ownerOf("app")).toBe("dev-1");
  await until(async () => changed.length === 1);
  expect(registry.cached("app")?.owner).toBe("dev-1");
  // Deleted on the other host: its owner is forgotten with it.
  await db.records("deployments").delete("app");
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  await until(async () => registry.ownerOf("app") === undefined);
});

it("keeps this host's own write over a re-read of another host's change that answers after it", async () => {
  // This host hears no announcement of its own writes: a re-read that read before one and
  // answered after it put the older record back, and the host served it until the next change.
  const { db, registry, changed, announce, holdNextAnswer } = await registryOfAHost();
  const records = db.records<Record<string, unknown>>("deployments");
  await records.put("app", { id: "app", artifact: "old" });
  const release = holdNextAnswer();
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  await registry.store({ id: "app", artifact: "new" } as never);
  release();
  await until(async () => changed.length === 1);
  expect(registry.cached("app")?.artifact).toBe("new");
});
