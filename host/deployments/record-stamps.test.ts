/**
 * Deployment records' stamps (record-stamps.ts) on a host of a shared database: the periodic check
 * reads again what an announcement lost would have said, and nothing more. A review found a host's
 * own change, and one it heard announced, told to its listeners again at the next check (its live
 * queries ran twice), a read in flight across a host's first check kept stale for good, and reads
 * retried after the host closed.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { until } from "../../test/helpers/arrivals.js";
import { HostDatabase } from "../db/index.js";
import { ClassicKv } from "../db/kv/classic-kv.js";
import type { HostBus, KvStore } from "../db/kv/kv.js";
import type { DeploymentRecord } from "./records.js";
import { DeploymentRegistry } from "./registry.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

async function sharedStore() {
  const dir = await mkdtemp(join(tmpdir(), "platform-review-"));
  const inner = await ClassicKv.open(dir);
  let handler: (message: string) => void = () => {};
  let failing = 0;
  let holding: Promise<void> | undefined;
  let snapshotGate: Promise<void> | undefined;
  let gets = 0;
  const bus: HostBus = {
    ...inner.bus,
    onBroadcast: (each) => {
      handler = each;
      return () => {};
    },
  };
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === "bus") return bus;
      if (property === "supports") return { ...target.supports, sharedAcrossProcesses: true };
      if (property === "readSnapshot")
        return async (owner?: string) => {
          const held = snapshotGate;
          snapshotGate = undefined;
          if (held) await held;
          return target.readSnapshot(owner);
        };
      if (property === "get")
        return (key: Buffer) => {
          gets++;
          if (failing > 0) {
            failing--;
            return Promise.reject(new Error("too many connections for role app"));
          }
          const answer = target.get(key);
          const held = holding;
          holding = undefined;
          return held ? held.then(() => answer) : answer;
        };
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as KvStore;
  cleanups.push(async () => {
    await inner.close().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });
  return {
    store,
    inner,
    announce: (text: string) => handler(text),
    failNext: (n: number) => (failing = n),
    gets: () => gets,
    holdNextAnswer: () => {
      const g = gate();
      holding = g.opened;
      return g.open;
    },
    holdNextSnapshot: () => {
      const g = gate();
      snapshotGate = g.opened;
      return g.open;
    },
  };
}

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

it("tells its listeners once of its own change, and once of one it heard announced", async () => {
  const host = await sharedStore();
  const dbA = await HostDatabase.openStore(host.store);
  const other = new DeploymentRegistry(
    dbA,
    () => {},
    () => {},
  );
  other.close();
  const db = await HostDatabase.openStore(host.store);
  const changed: string[] = [];
  const registry = new DeploymentRegistry(
    db,
    () => {},
    (id) => changed.push(id),
  );
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
  const host = await sharedStore();
  const dbA = await HostDatabase.openStore(host.store);
  const db = await HostDatabase.openStore(host.store);
  const other = new DeploymentRegistry(
    dbA,
    () => {},
    () => {},
  );
  other.close();
  await other.save(record("app", "one"));
  const openSnapshot = host.holdNextSnapshot();
  // Its first check waits for its snapshot.
  const registry = new DeploymentRegistry(
    db,
    () => {},
    () => {},
  );
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
  const host = await sharedStore();
  const db = await HostDatabase.openStore(host.store);
  const errors: string[] = [];
  vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
    errors.push(String(args[0]));
  });
  const registry = new DeploymentRegistry(
    db,
    () => {},
    () => {},
  );
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
  const host = await sharedStore();
  const dbA = await HostDatabase.openStore(host.store);
  const other = new DeploymentRegistry(
    dbA,
    () => {},
    () => {},
  );
  other.close();
  const db = await HostDatabase.openStore(host.store);
  const changed: string[] = [];
  const registry = new DeploymentRegistry(
    db,
    () => {},
    (id) => changed.push(id),
  );
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
