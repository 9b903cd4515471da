import { afterEach, beforeEach, expect, it } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import { deferred } from "../../test/helpers/deferred.js";
import { WriteLock } from "./write-lock.js";

let env: Awaited<ReturnType<typeof tempDatabase>>;
beforeEach(async () => {
  env = await tempDatabase();
});
afterEach(() => env.dispose());

it("is idle only while nobody holds it or waits for it, however its holders end", async () => {
  const lock = new WriteLock();
  expect(lock.idle).toBe(true);
  const gate = deferred();
  const first = lock.run(() => gate.promise);
  const second = lock.run(async () => {
    throw new Error("second");
  });
  expect(lock.idle).toBe(false);
  gate.resolve();
  await first;
  expect(lock.idle).toBe(false);
  await expect(second).rejects.toThrow("second");
  expect(lock.idle).toBe(true);
});

it("keeps a named lock exclusive across holders that come after it was forgotten", async () => {
  // Wave after wave on one name: each wave's lock is forgotten once idle, and the next still
  // excludes its own holders from each other.
  let inside = 0;
  let most = 0;
  const hold = () =>
    env.db.exclusive("owner:x", async () => {
      inside++;
      most = Math.max(most, inside);
      await new Promise((resolve) => setTimeout(resolve, 2));
      inside--;
    });
  for (let wave = 0; wave < 5; wave++) {
    await Promise.all([hold(), hold(), hold()]);
    // One joining while the previous holder still runs.
    const running = hold();
    await Promise.all([hold(), running]);
  }
  expect(most).toBe(1);
});

const neverUnlocked = async (): Promise<never> => {
  throw new Error("ran without its locks");
};

it("takes locks together only when all are free: waiting for one, it holds none of the others", async () => {
  const slow = deferred();
  const slowHeld = env.db.exclusive("lifecycle:b", () => slow.promise);
  let together = false;
  const all = env.db.exclusiveAtOnce(
    ["lifecycle:b", "lifecycle:a", "lifecycle:c"],
    async () => {
      together = true;
    },
    neverUnlocked,
  );
  // "a" sorts first: a lock taken in order would be held now, waiting for "b".
  expect(await env.db.exclusive("lifecycle:a", async () => "a free")).toBe("a free");
  expect(await env.db.exclusive("lifecycle:c", async () => "c free")).toBe("c free");
  expect(together).toBe(false);
  slow.resolve();
  await slowHeld;
  await all;
  expect(together).toBe(true);
});

it("holds every lock while its work runs, and releases them however it ends", async () => {
  const gate = deferred();
  const entered = deferred();
  const all = env.db.exclusiveAtOnce(
    ["x", "y"],
    async () => {
      entered.resolve();
      await gate.promise;
      throw new Error("work failed");
    },
    neverUnlocked,
  );
  await entered.promise;
  let yTaken = false;
  const y = env.db.exclusive("y", async () => {
    yTaken = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(yTaken).toBe(false);
  gate.resolve();
  await expect(all).rejects.toThrow("work failed");
  await y;
  expect(yTaken).toBe(true);
  expect(await env.db.exclusiveAtOnce(["x", "y"], async () => "again", neverUnlocked)).toBe("again");
});

it("runs its work holding none when one lock is never free, rather than hold the others while it waits", async () => {
  // Two holders of "b" queued at all times: each round finds it busy. Taking the locks in order
  // held "a" (every other deployment's, for a backup) while it waited for "b".
  let stop = false;
  const keepBusy = async () => {
    while (!stop) await env.db.exclusive("b", () => new Promise((resolve) => setImmediate(resolve)));
  };
  const busy = [keepBusy(), keepBusy()];
  let aFree = 0;
  const probing = (async () => {
    while (!stop) {
      await env.db.exclusive("a", async () => {
        aFree++;
      });
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  const result = await env.db.exclusiveAtOnce(
    ["a", "b"],
    async () => "locked",
    async () => "unlocked",
  );
  stop = true;
  await Promise.all([...busy, probing]);
  expect(result).toBe("unlocked");
  expect(aFree).toBeGreaterThan(0);
});

it("ends its wait when its signal is aborted", async () => {
  const slow = deferred();
  const slowHeld = env.db.exclusive("b", () => slow.promise);
  const left = new AbortController();
  const all = env.db.exclusiveAtOnce(["a", "b"], async () => "locked", neverUnlocked, {
    signal: left.signal,
  });
  left.abort();
  slow.resolve();
  await slowHeld;
  await expect(all).rejects.toThrow();
  expect(await env.db.exclusive("a", async () => "a free")).toBe("a free");
});

it("gives a held lock's release once, however often it is called", async () => {
  const lock = new WriteLock();
  const release = lock.tryHold();
  expect(release).toBeDefined();
  expect(lock.tryHold()).toBeUndefined();
  let ran = false;
  const next = lock.run(async () => {
    ran = true;
  });
  release?.();
  release?.();
  await next;
  expect(ran).toBe(true);
  expect(lock.idle).toBe(true);
});
