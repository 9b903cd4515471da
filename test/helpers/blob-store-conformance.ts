import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { BlobStore } from "../../host/storage/index.js";

/** The conformance suite every blob store runs (STYLE.md: one suite, every backend). */
export function blobStoreConformance(
  name: string,
  open: () => Promise<{ store: BlobStore; dispose: () => Promise<void> }>,
): void {
  describe(`${name} conformance`, () => {
    it("stores, reads back exactly, overwrites and deletes idempotently", async () => {
      const { store, dispose } = await open();
      try {
        const bytes = randomBytes(100_000);
        await store.put("dep1/private/abc", bytes);
        expect((await store.get("dep1/private/abc"))?.equals(bytes)).toBe(true);
        await store.put("dep1/private/abc", Buffer.from("second"));
        expect((await store.get("dep1/private/abc"))?.toString()).toBe("second");
        await store.delete("dep1/private/abc");
        await store.delete("dep1/private/abc");
        expect(await store.get("dep1/private/abc")).toBeUndefined();
        expect(await store.get("dep1/private/never")).toBeUndefined();
      } finally {
        await dispose();
      }
    });

    it("stores empty blobs and lists by prefix", async () => {
      const { store, dispose } = await open();
      try {
        await store.put("a/public/one", new Uint8Array(0));
        await store.put("a/private/two", Buffer.from("x"));
        await store.put("b/public/three", Buffer.from("y"));
        expect((await store.get("a/public/one"))?.length).toBe(0);
        expect(await store.list("a/")).toEqual(["a/private/two", "a/public/one"]);
        expect(await store.list("")).toHaveLength(3);
        // A prefix that ends inside a name, and one naming nothing stored.
        expect(await store.list("a/pub")).toEqual(["a/public/one"]);
        expect(await store.list("c/")).toEqual([]);
        expect(await store.list("a/public/")).toEqual(["a/public/one"]);
      } finally {
        await dispose();
      }
    });

    it("streams a blob's bytes, and answers undefined for a missing one", async () => {
      const { store, dispose } = await open();
      try {
        const bytes = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));
        await store.put("a/public/big", bytes);
        const stream = await store.stream("a/public/big");
        const chunks: Buffer[] = [];
        for await (const chunk of stream ?? []) chunks.push(Buffer.from(chunk as Uint8Array));
        expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
        expect(await store.stream("a/public/missing")).toBeUndefined();
      } finally {
        await dispose();
      }
    });

    it("refuses keys that could escape the store", async () => {
      const { store, dispose } = await open();
      try {
        for (const key of [
          "../etc/passwd",
          "a/../../b",
          "/abs",
          "a//b",
          "",
          "a/b c",
          "a/.hidden",
          "a/%2e%2e",
        ]) {
          await expect(store.put(key, Buffer.from("x")), key).rejects.toMatchObject({ code: "bad_request" });
          await expect(store.get(key), key).rejects.toMatchObject({ code: "bad_request" });
        }
      } finally {
        await dispose();
      }
    });

    it("keeps concurrent puts of different keys apart", async () => {
      const { store, dispose } = await open();
      try {
        const blobs = Array.from(
          { length: 20 },
          (_, i) => [`c/public/k${i}`, randomBytes(1000 + i)] as const,
        );
        await Promise.all(blobs.map(([key, data]) => store.put(key, data)));
        for (const [key, data] of blobs) expect((await store.get(key))?.equals(data), key).toBe(true);
      } finally {
        await dispose();
      }
    });
  });
}
