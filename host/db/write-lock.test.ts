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
