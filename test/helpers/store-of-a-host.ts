/**
 * A classic-level store as one host of a shared database sees it, for the deployment registry's
 * tests: broadcasts come from `announce`, the next reads fail as a database away does, a read's
 * answer or a snapshot can be held back, reads are counted; with `shared`, the store says it is
 * shared across processes (the registry then checks its records' stamps).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClassicKv } from "../../host/db/kv/classic-kv.js";
import type { HostBus, KvStore } from "../../host/db/kv/kv.js";

function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

/** The store, and what it is closed by (`cleanups` gets it). */
export async function storeOfAHost(cleanups: Array<() => Promise<void>>, shared = false) {
  const dir = await mkdtemp(join(tmpdir(), "platform-registry-"));
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
      if (property === "supports" && shared)
        return Object.assign({}, target.supports, { sharedAcrossProcesses: true });
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
