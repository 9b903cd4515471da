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

/** A registry on {@link storeOfAHost}'s store, with the ids it was told changed and gone. */
async function registryOfAHost() {
  const host = await storeOfAHost(cleanups);
  const db = await HostDatabase.openStore(host.store);
  const changed: string[] = [];
  const gone: string[] = [];
  const registry = new DeploymentRegistry(
    db,
    (id) => gone.push(id),
    (id) => changed.push(id),
  );
  const records = db.records<Record<string, unknown>>("deployments");
  return { ...host, db, registry, changed, gone, records };
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

it("keeps nothing of deployments created and deleted, here or on another host, however many there were", async () => {
  // It kept a count of changes for every id ever announced, for the host's life: an attacker
  // creating and deleting deployment ids grew every host's memory with each one.
  const host = await storeOfAHost(cleanups);
  // Opened first: the store hands its announcements to the database opened last, this host's.
  const other = new DeploymentRegistry(await HostDatabase.openStore(host.store), () => {});
  const db = await HostDatabase.openStore(host.store);
  const told = { changed: 0, gone: 0 };
  const registry = new DeploymentRegistry(
    db,
    () => told.gone++,
    () => told.changed++,
  );
  const marker = (id: string) => ({
    type: "put" as const,
    key: db.records("test-markers").key(id),
    value: "{}",
  });
  const record = (id: string) => ({ id, artifact: "h", owner: "dev", incarnation: `${id}-1` }) as never;
  const announce = (id: string) => host.announce(JSON.stringify({ type: "deployment", id }));
  const cycles = async (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      await registry.save(record(`here-${i}`));
      await registry.retire(record(`here-${i}`), marker(`here-${i}`));
      expect(await registry.get(`never-${i}`)).toBeUndefined();
    }
    // Created on another host, heard of here, then deleted there.
    for (let i = from; i < to; i++) {
      await other.save(record(`there-${i}`));
      announce(`there-${i}`);
    }
    await until(async () => told.changed === 2 * to);
    for (let i = from; i < to; i++) {
      await other.retire(record(`there-${i}`), marker(`there-${i}`));
      announce(`there-${i}`);
    }
    await until(async () => told.gone === to);
  };
  await cycles(0, 20);
  const after20 = registry.keptIds();
  await cycles(20, 400);
  expect(registry.keptIds()).toEqual(after20);
  expect(after20).toEqual([0, 0, 0]);
});

it("does not keep a read of a record that answers after another host's change was heard and read", async () => {
  const { db, registry, changed, announce, holdNextAnswer } = await registryOfAHost();
  const records = db.records<Record<string, unknown>>("deployments");
  await records.put("app", { id: "app", artifact: "old" });
  // A call's read of the record, its answer late.
  const release = holdNextAnswer();
  const reading = registry.get("app");
  await records.put("app", { id: "app", artifact: "new" });
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  await until(async () => changed.length === 1);
  expect(registry.cached("app")?.artifact).toBe("new");
  release();
  expect((await reading)?.artifact).toBe("old");
  // The older answer is handed to its caller, not kept over the newer record.
  expect(registry.cached("app")?.artifact).toBe("new");
  expect(registry.keptIds()[2]).toBe(0);
});

it("ends what it ran of a deployment when a read again finds the id created anew, unheard of", async () => {
  // On a host that missed the deletion, a deploy, claim or deletion of the id reads its record again:
  // the old incarnation's isolate and log lines stayed, the new owner reading the old one's lines.
  const { registry, gone, changed, records } = await registryOfAHost();
  await records.put("app", { id: "app", incarnation: "first" });
  expect((await registry.get("app"))?.incarnation).toBe("first");
  await records.put("app", { id: "app", incarnation: "second" });
  expect((await registry.reload("app"))?.incarnation).toBe("second");
  expect(gone).toEqual(["app"]);
  // Its listeners are told as if announced, and the old one ends once, not again.
  await until(async () => changed.length === 1);
  await registry.reload("app");
  expect(gone).toEqual(["app"]);
});

it("ends the old incarnation when a call's read finds the id created anew, once, while word of it is read", async () => {
  // A refusal of the old one's data drops the record and reads it again; a call before that read
  // ended read the new record and ran the new code for the old one's sockets and live queries.
  const { registry, gone, changed, records, announce, holdNextAnswer } = await registryOfAHost();
  await records.put("app", { id: "app", incarnation: "first" });
  expect((await registry.get("app"))?.incarnation).toBe("first");
  await records.put("app", { id: "app", incarnation: "second" });
  // Word of the change; its read is slow to answer.
  const release = holdNextAnswer();
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  expect((await registry.get("app"))?.incarnation).toBe("second");
  expect(gone).toEqual(["app"]);
  // The slow read settles after: the new one is changed, not ended.
  release();
  await until(async () => changed.length === 1);
  expect(gone).toEqual(["app"]);
});

it("lets a read overtaken by a newer record decide nothing: begun before a deletion and a re-creation, it ends nothing", async () => {
  const { registry, gone, records, announce, holdNextAnswer } = await registryOfAHost();
  await records.put("app", { id: "app", incarnation: "first" });
  expect((await registry.get("app"))?.incarnation).toBe("first");
  // Deleted; word of it comes, and its read (finding nothing) is slow to answer.
  await records.delete("app");
  const release = holdNextAnswer();
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  // Created again meanwhile, and read by a call: the first one ends.
  await records.put("app", { id: "app", incarnation: "second" });
  expect((await registry.get("app"))?.incarnation).toBe("second");
  expect(gone).toEqual(["app"]);
  // The slow read of the deletion settles after: it ended the second one's isolate.
  release();
  await until(async () => registry.keptIds()[2] === 0);
  expect(gone).toEqual(["app"]);
  expect(registry.cached("app")?.incarnation).toBe("second");
});

it("ends what it ran of a deployment when a call's read finds it deleted while word of it could not be read", async () => {
  // Word of the deletion came, and its read failed (tried again later, or given up): the id had
  // no record cached, but its incarnation known. A deploy creating the id again here read nothing,
  // then kept the new record: nothing ended the old one, its isolate and log lines stayed for the
  // new owner, and the read tried again found the new record, of the incarnation then known.
  const { registry, gone, records, announce, failNext, gets } = await registryOfAHost();
  await records.put("app", { id: "app", incarnation: "first" });
  expect((await registry.get("app"))?.incarnation).toBe("first");
  await records.delete("app");
  failNext(1);
  announce(JSON.stringify({ type: "deployment", id: "app" }));
  expect(registry.cached("app")).toBeUndefined();
  const readsBefore = gets();
  expect(await registry.get("app")).toBeUndefined();
  expect(gone).toEqual(["app"]);
  await registry.store({ id: "app", incarnation: "second" } as never);
  // The read tried again (500 ms later) finds the new one: changed, not ended again.
  await until(async () => gets() > readsBefore + 1 && registry.keptIds()[2] === 0);
  expect(gone).toEqual(["app"]);
  expect(registry.cached("app")?.incarnation).toBe("second");
});
