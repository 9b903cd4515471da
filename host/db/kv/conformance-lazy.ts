import { put, storeTestOn, type TestApi, text } from "./conformance.js";
import { collect, type KvStore } from "./kv.js";

/**
 * What every backend's `lazySnapshot()` must do, beside the conformance suite of conformance.ts:
 * it sees every write that landed before it was made; once it has read, its view is fixed like a
 * snapshot's; it commits, with or without reads, and closes whether or not it read.
 */
export function lazySnapshotConformance(
  name: string,
  open: () => Promise<KvStore>,
  { describe, it, expect }: TestApi,
): void {
  describe(`${name} lazy snapshots`, () => {
    const storeTest = storeTestOn(open, it);

    storeTest("see what landed before them, then a fixed view from their first read", async (store) => {
      await store.batch([put(text("l1"), "1")]);
      const lazy = await store.lazySnapshot();
      await store.batch([put(text("l2"), "2")]);
      // Its point in time is between its making and its first read: l1 is there, l2 may be.
      const [l1, l2] = await Promise.all([lazy.get(text("l1")), lazy.get(text("l2"))]);
      expect(l1).toBe("1");
      expect([undefined, "2"]).toContain(l2);
      await store.batch([put(text("l1"), "changed"), put(text("l3"), "3")]);
      expect(await lazy.get(text("l1"))).toBe("1");
      expect(await lazy.get(text("l2"))).toBe(l2);
      const keys = (await collect(lazy.iterate({ gte: text("l"), lt: text("m") }))).map(([k]) =>
        k.toString(),
      );
      expect(keys).toEqual(l2 === undefined ? ["l1"] : ["l1", "l2"]);
      await lazy.close();
      await lazy.close();
    });

    storeTest("commit with and without reads, and close unread", async (store) => {
      const unread = await store.lazySnapshot();
      await store.commit(unread, [put(text("c1"), "a")]);
      await unread.close();
      const read = await store.lazySnapshot();
      expect(await read.get(text("c1"))).toBe("a");
      await store.commit(read, [put(text("c2"), "b"), { type: "del", key: text("c1") }]);
      await read.close();
      expect(await store.getMany([text("c1"), text("c2")])).toEqual([undefined, "b"]);
      const empty = await store.lazySnapshot();
      await store.commit(empty, [], "nothing written");
      await empty.close();
      const idle = await store.lazySnapshot();
      await idle.close();
      const after = await store.lazySnapshot();
      expect(await after.get(text("c2"))).toBe("b");
      await after.close();
    });
  });
}
