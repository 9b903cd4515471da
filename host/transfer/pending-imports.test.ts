import { afterEach, beforeEach, expect, it } from "vitest";
import { isPlatformError } from "../../sdk/values/index.js";
import { tempDatabase } from "../../test/helpers/db.js";
import { MemoryBlobStore, ObjectService, ObjectTransfer } from "../storage/index.js";
import { PendingImports } from "./pending-imports.js";

/** A blob store that cannot remove anything while `down` (an S3 outage). */
class FlakyBlobStore extends MemoryBlobStore {
  down = false;

  override async delete(key: string): Promise<void> {
    if (this.down) throw new Error("storage unreachable");
    return super.delete(key);
  }
}

let env: Awaited<ReturnType<typeof tempDatabase>>;
beforeEach(async () => {
  env = await tempDatabase();
});
afterEach(() => env.dispose());

it("keeps naming staged bytes it could not remove, and removes them when asked again", async () => {
  const blobs = new FlakyBlobStore();
  const objects = new ObjectService(env.db, blobs, async () => ({ quotaOwner: "dev-1", incarnation: null }));
  const pending = new PendingImports(env.db, new ObjectTransfer(env.db, objects));
  const staged = ["shop/private/aaaaaaaaaaaaaaaaaaaaaa", "shop/public/bbbbbbbbbbbbbbbbbbbbbb"];
  await pending.begin("shop", staged);
  for (const key of staged) await blobs.put(key, Buffer.from("staged"));

  // The import failed, and storage is down while it cleans up: the bytes stay, and so does the
  // marker naming them (before, the marker went and the bytes were nobody's forever).
  blobs.down = true;
  const failed = await pending.finish("shop").catch((error: unknown) => error);
  expect(isPlatformError(failed) && failed.code).toBe("unavailable");
  expect(await pending.unfinished()).toEqual(["shop"]);
  expect(await blobs.list("shop")).toHaveLength(2);

  // Storage is back: the next start (or import of the id) removes them and the marker.
  blobs.down = false;
  await pending.finish("shop");
  expect(await pending.unfinished()).toEqual([]);
  expect(await blobs.list("shop")).toEqual([]);
});
