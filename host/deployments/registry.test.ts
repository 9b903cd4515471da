/**
 * Another host's announcement makes this one read the deployment's record again. A read that
 * fails then (the database out of connections, a failover) must neither end the host (an
 * unhandled rejection does) nor leave the change unheard: it is tried again until it reads.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { until } from "../../test/helpers/arrivals.js";
import { HostDatabase } from "../db/index.js";
import { ClassicKv } from "../db/kv/classic-kv.js";
import type { HostBus, KvStore } from "../db/kv/kv.js";
import { DeploymentRegistry } from "./registry.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/**
 * A classic-level store as a host on a shared database sees it: broadcasts come from `announce`,
 * and the next `failing` reads fail as a database that is away does.
 */
async function storeOfAHost(): Promise<{
  store: KvStore;
  announce: (text: string) => void;
  failNext: (n: number) => void;
  /** Holds back the answer of the next read (made now) until the function returned is called. */
  holdNextAnswer: () => () => void;
}> {
  const dir = await mkdtemp(join(tmpdir(), "platform-registry-"));
  const inner = await ClassicKv.open(dir);
  let handler: (message: string) => void = () => {};
  let failing = 0;
  let holding: Promise<void> | undefined;
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
      if (property === "get")
        return (key: Buffer) => {
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
  });
  cleanups.push(async () => {
    await inner.close();
    await rm(dir, { recursive: true, force: true });
  });
  return {
    store,
    announce: (text) => handler(text),
    failNext: (n) => (failing = n),
    holdNextAnswer: () => {
      let release = () => {};
      holding = new Promise((resolve) => {
        release = resolve;
      });
      return release;
    },
  };
}

/** A registry on {@link storeOfAHost}'s store, with the ids it was told changed. */
async function registryOfAHost() {
  const host = await storeOfAHost();
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
  const { store, announce, failNext } = await storeOfAHost();
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
