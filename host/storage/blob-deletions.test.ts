import { describe, expect, it } from "vitest";
import { BlobDeletions } from "./blob-deletions.js";
import { MemoryBlobStore } from "./memory-blob-store.js";

async function storeWith(...keys: string[]): Promise<MemoryBlobStore> {
  const blobs = new MemoryBlobStore();
  for (const key of keys) await blobs.put(key, Buffer.from(key));
  return blobs;
}

describe("BlobDeletions", () => {
  it("deletes at once while nothing holds it", async () => {
    const blobs = await storeWith("d/public/a");
    await new BlobDeletions(blobs, async () => false).delete("d/public/a");
    expect(await blobs.get("d/public/a")).toBeUndefined();
  });

  it("says which removals wait for a backup (an import may not write other bytes there meanwhile)", async () => {
    const blobs = await storeWith("d/public/a", "d/public/b");
    const deletions = new BlobDeletions(blobs, async () => false);
    expect(deletions.isHeld("d/public/a")).toBe(false);
    const hold = deletions.hold();
    await deletions.delete("d/public/a");
    expect(deletions.isHeld("d/public/a")).toBe(true);
    expect(deletions.isHeld("d/public/b")).toBe(false);
    await hold.release();
    expect(deletions.isHeld("d/public/a")).toBe(false);
  });

  it("keeps bytes while held and removes them when the last hold ends", async () => {
    const blobs = await storeWith("d/public/a", "d/public/b");
    const deletions = new BlobDeletions(blobs, async () => false);
    const first = deletions.hold();
    const second = deletions.hold();
    await deletions.delete("d/public/a");
    await deletions.delete("d/public/b");
    expect(deletions.waiting).toBe(2);
    await first.release();
    await first.release(); // a second call of one release changes nothing
    expect((await blobs.list("d/")).length).toBe(2);
    await second.release();
    expect(await blobs.list("d/")).toEqual([]);
    expect(deletions.waiting).toBe(0);
  });

  it("keeps held bytes that a record names again by the release", async () => {
    const blobs = await storeWith("d/public/kept", "d/public/gone");
    const referenced = new Set<string>();
    const deletions = new BlobDeletions(blobs, async (key) => referenced.has(key));
    const { release } = deletions.hold();
    await deletions.delete("d/public/kept");
    await deletions.delete("d/public/gone");
    // An import put a record with the same key (and the same bytes) back meanwhile.
    referenced.add("d/public/kept");
    await release();
    expect(await blobs.list("d/")).toEqual(["d/public/kept"]);
  });

  it("keeps bytes when the reference check fails (they may be named; unreferenced bytes are harmless)", async () => {
    const blobs = await storeWith("d/public/a");
    const deletions = new BlobDeletions(blobs, async () => {
      throw new Error("database down");
    });
    const { release } = deletions.hold();
    await deletions.delete("d/public/a");
    await release();
    expect(await blobs.list("d/")).toEqual(["d/public/a"]);
  });

  it("removes at once bytes written after every open hold's snapshot, which no backup names", async () => {
    const blobs = await storeWith("d/public/old", "d/public/between");
    const deletions = new BlobDeletions(blobs, async () => false);
    const hold = deletions.hold();
    // Written before the snapshot: the snapshot may name it.
    deletions.written("d/public/between");
    hold.snapshotTaken();
    await blobs.put("d/public/new", Buffer.from("new"));
    deletions.written("d/public/new");
    for (const key of ["d/public/old", "d/public/between", "d/public/new"]) await deletions.delete(key);
    expect(await blobs.list("d/")).toEqual(["d/public/between", "d/public/old"]);
    expect(deletions.waiting).toBe(2);

    // A second backup's snapshot may name anything written before it began.
    await blobs.put("d/public/again", Buffer.from("again"));
    deletions.written("d/public/again");
    const second = deletions.hold();
    second.snapshotTaken();
    await deletions.delete("d/public/again");
    expect(await blobs.list("d/")).toContain("d/public/again");
    await hold.release();
    await second.release();
    expect(await blobs.list("d/")).toEqual([]);
  });

  it("keeps held the bytes of a key written again after its removal was held", async () => {
    const blobs = await storeWith("d/public/k");
    const deletions = new BlobDeletions(blobs, async () => false);
    const hold = deletions.hold();
    hold.snapshotTaken();
    // The snapshot names k; it is deleted, then an import stages the same key again and fails.
    await deletions.delete("d/public/k");
    await blobs.put("d/public/k", Buffer.from("d/public/k"));
    deletions.written("d/public/k");
    await deletions.delete("d/public/k");
    expect(await blobs.list("d/")).toEqual(["d/public/k"]);
    await hold.release();
    expect(await blobs.list("d/")).toEqual([]);
  });
});
