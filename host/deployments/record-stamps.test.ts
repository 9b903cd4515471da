/**
 * Deployment records' stamps (record-stamps.ts) on a host of a shared database: the periodic check
 * reads again what an announcement lost would have said, and nothing more. A review found a host's
 * own change, and one it heard announced, told to its listeners again at the next check (its live
 * queries ran twice), a read in flight across a host's first check kept stale for good, and reads
 * retried after the host closed.
 */
import { afterEach, expect, it, vi } from "vitest";
import { until } from "../../test/helpers/arrivals.js";
import { storeOfAHost } from "../../test/helpers/store-of-a-host.js";
import { HostDatabase } from "../db/index.js";
import type { DeploymentRecord } from "./records.js";
import { DeploymentRegistry } from "./registry.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const record = (id: string, label: string): DeploymentRecord =>
  ({
    id,
    incarnation: "i1",
    owner: "dev",
    artifact: "h",
    label,
    createdAt: 1,
    updatedAt: 1,
  }) as unknown as DeploymentRecord;

type Labelled = DeploymentRecord & { label: string };
const labelOf = (record: DeploymentRecord | undefined) => (record as Labelled | undefined)?.label;

/** Another host's registry, whose announcements this one never hears on its own. */
async function anotherHost(host: Awaited<ReturnType<typeof storeOfAHost>>): Promise<DeploymentRegistry> {
  const other = new DeploymentRegistry(await HostDatabase.openStore(host.store), noop, noop);
  other.close();
  return other;
}

/** This host's registry on `host`'s store, and the ids its listeners were told changed. */
async function thisHost(host: Awaited<ReturnType<typeof storeOfAHost>>) {
  const db = await HostDatabase.openStore(host.store);
  const changed: string[] = [];
  const registry = new DeploymentRegistry(db, noop, (id) => changed.push(id));
  return { db, registry, changed };
}

const noop = () => {};

it("tells its listeners once of its own change, and once of one it heard announced", async () => {
  const host = await storeOfAHost(cleanups, true);
  const other = await anotherHost(host);
  const { registry, changed } = await thisHost(host);
  await registry.checkStampsNow();
  await registry.save(record("app", "one"));
  expect(changed).toEqual(["app"]);
  await registry.checkStampsNow();
  expect(changed).toEqual(["app"]);
  // Another host's change, announced: read again once, and not again at the check.
  await other.save(record("app", "two"));
  host.announce(JSON.stringify({ type: "deployment", id: "app" }));
  await until(async () => labelOf(await registry.get("app")) === "two");
  expect(changed).toEqual(["app", "app"]);
  await registry.checkStampsNow();
  expect(changed).toEqual(["app", "app"]);
  // One whose announcement was lost: the check reads it.
  await other.save(record("app", "three"));
  await registry.checkStampsNow();
  await until(async () => registry.cached("app") !== undefined);
  expect(labelOf(registry.cached("app"))).toBe("three");
  expect(changed).toEqual(["app", "app", "app"]);
  registry.close();
});

it("keeps no read that was in flight across its first check, its announcement lost", async () => {
  const host = await storeOfAHost(cleanups, true);
  const other = await anotherHost(host);
  await other.save(record("app", "one"));
  const openSnapshot = host.holdNextSnapshot();
  // Its first check waits for its snapshot.
  const { registry } = await thisHost(host);
  const release = host.holdNextAnswer();
  const reading = registry.get("app");
  // Changed on another host, its announcement lost.
  await other.save(record("app", "two"));
  openSnapshot();
  await registry.checkStampsNow();
  release();
  expect(labelOf(await reading)).toBe("one");
  await registry.checkStampsNow();
  expect(labelOf(registry.cached("app"))).not.toBe("one");
  expect(labelOf(await registry.get("app"))).toBe("two");
  registry.close();
});

it("reads nothing more once closed, and reports no failure of a check it stopped", async () => {
  const host = await storeOfAHost(cleanups, true);
  const errors: string[] = [];
  vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
    errors.push(String(args[0]));
  });
  const { db, registry } = await thisHost(host);
  await registry.checkStampsNow();
  host.failNext(2);
  host.announce(JSON.stringify({ type: "deployment", id: "app" }));
  await until(async () => errors.length > 0);
  registry.close();
  await db.close();
  const readsAtClose = host.gets();
  // Its retries would have come within a second and a half.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  expect(host.gets()).toBe(readsAtClose);
  expect(errors.filter((error) => error.includes("stamps"))).toEqual([]);
});

it("tells its listeners of a change it found by reading the record again, its announcement lost", async () => {
  // A reload (a client file missing from the cached version, a decision under the id's lock)
  // refreshed the cache without telling anyone; the stamps' check then took it as heard of.
  const host = await storeOfAHost(cleanups, true);
  const other = await anotherHost(host);
  const { registry, changed } = await thisHost(host);
  await other.save(record("app", "one"));
  await registry.checkStampsNow();
  expect(labelOf(await registry.get("app"))).toBe("one");
  changed.length = 0;
  await other.save(record("app", "two"));
  expect(labelOf(await registry.reload("app"))).toBe("two");
  await registry.checkStampsNow();
  await until(async () => changed.length > 0);
  expect(changed).toEqual(["app"]);
  registry.close();
});
