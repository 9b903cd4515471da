import { afterEach, beforeEach, expect, it } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import { MemoryBlobStore } from "./memory-blob-store.js";
import { chargedBytes } from "./object-keys.js";
import type { ObjectRecord } from "./object-records.js";
import { ObjectService } from "./objects.js";

/** A blob store whose puts wait until `release()`: an upload caught between its check and its record. */
class SlowBlobStore extends MemoryBlobStore {
  private gate: Promise<void> = Promise.resolve();
  release = () => {};
  reached = Promise.resolve();

  hold(): void {
    this.gate = new Promise((resolve) => {
      this.release = resolve;
    });
    this.reached = new Promise((resolve) => {
      const put = this.put.bind(this);
      this.put = async (key, data) => {
        resolve();
        await this.gate;
        return put(key, data);
      };
    });
  }
}

let env: Awaited<ReturnType<typeof tempDatabase>>;
beforeEach(async () => {
  env = await tempDatabase();
});
afterEach(() => env.dispose());

const upload = (objects: ObjectService, size: number) =>
  objects.upload({
    deployment: "gone",
    quotaOwner: "dev-1",
    incarnation: null,
    visibility: "public",
    contentType: "application/octet-stream",
    bytes: Buffer.alloc(size, 7),
    uploaderId: "user:1",
    uploaderEmail: "one@example.com",
  });

it("purges a deleted deployment's objects and usage, and refuses an upload that raced the deletion", async () => {
  const live = new Map([["gone", "dev-1"]]);
  const blobs = new SlowBlobStore();
  const objects = new ObjectService(env.db, blobs, async (id) => {
    const owner = live.get(id);
    return owner === undefined ? undefined : { quotaOwner: owner, incarnation: null };
  });
  await upload(objects, 1000);
  await upload(objects, 500);
  // Each file counts 4 KiB at least (LIMITS.storageBytesPerFile).
  expect(await objects.used("dev-1")).toBe(chargedBytes(1000) + chargedBytes(500));
  blobs.hold();
  const racing = upload(objects, 300);
  await blobs.reached;
  live.delete("gone");
  const purging = objects.purgeDeployment("gone", "dev-1");
  blobs.release();
  await expect(racing).rejects.toMatchObject({ code: "not_found" });
  await purging;
  await objects.purgeDeployment("gone", "dev-1");
  expect(await objects.used("dev-1")).toBe(0);
  // Created again (as the same incarnation, for this listing): nothing of the old one is left.
  live.set("gone", "dev-1");
  expect(await objects.list({ id: "gone", incarnation: null })).toEqual({
    objects: [],
    totals: { count: 0, bytes: 0 },
    truncated: false,
  });
  expect(await blobs.list("gone/")).toEqual([]);
});

it("refuses an upload authorised before a deletion once its owner created the id again", async () => {
  // Before, only the quota owner was compared: the same developer's new deployment got the upload.
  let holder = { quotaOwner: "dev-1", incarnation: "first" as string | null };
  const blobs = new SlowBlobStore();
  const objects = new ObjectService(env.db, blobs, async () => holder);
  blobs.hold();
  const racing = objects.upload({
    deployment: "gone",
    quotaOwner: "dev-1",
    incarnation: "first",
    visibility: "public",
    contentType: "application/octet-stream",
    bytes: Buffer.alloc(10, 7),
    uploaderId: "user:1",
    uploaderEmail: null,
  });
  await blobs.reached;
  await objects.purgeDeployment("gone", "dev-1");
  holder = { quotaOwner: "dev-1", incarnation: "second" };
  blobs.release();
  await expect(racing).rejects.toMatchObject({ code: "not_found" });
  expect((await objects.list({ id: "gone", incarnation: "second" })).objects).toEqual([]);
  expect(await objects.used("dev-1")).toBe(0);
});

it("frees what a file stored before the 4 KiB rule was charged: its size", async () => {
  // Before, removing an old empty file freed 4 KiB it had never been charged: 20 of them let a
  // developer store 80 KiB more than the limit.
  const objects = new ObjectService(env.db, new MemoryBlobStore(), async () => ({
    quotaOwner: "dev-1",
    incarnation: null,
  }));
  const old = await upload(objects, 100);
  await upload(objects, 10);
  const records = env.db.records<ObjectRecord>("objects");
  const { charged: _charged, ...stored } = old;
  await records.put(`gone/${old.key}`, stored);
  await env.db.records<{ bytes: number }>("storage-usage").put("dev-1", { bytes: 100 + chargedBytes(10) });
  await objects.remove({ id: "gone", incarnation: null }, "public", old.id, { kind: "owner" });
  expect(await objects.used("dev-1")).toBe(chargedBytes(10));
});
