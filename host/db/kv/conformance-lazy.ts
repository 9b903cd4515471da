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

    storeTest("readers' snapshots: each sees every write that landed before it was made", async (store) => {
      await store.batch([put(text("r1"), "1")]);
      const first = await store.readSnapshot();
      const beside = await store.readSnapshot();
      expect(await first.get(text("r1"))).toBe("1");
      await store.batch([put(text("r1"), "2"), put(text("r2"), "new")]);
      // Made after the write landed: whatever it shares, it sees it.
      const after = await store.readSnapshot();
      const [r1, r2] = await Promise.all([after.get(text("r1")), after.get(text("r2"))]);
      expect([r1, r2]).toEqual(["2", "new"]);
      // The earlier ones keep their fixed views, whoever closes first.
      await after.close();
      expect(await first.get(text("r1"))).toBe("1");
      await first.close();
      const besideView = await beside.get(text("r1"));
      expect(["1", "2"]).toContain(besideView);
      expect(await beside.get(text("r1"))).toBe(besideView);
      await beside.close();
      await beside.close();
    });

    storeTest("readers made together each get their own answers, reads and scans mixed", async (store) => {
      await store.batch(
        Array.from({ length: 30 }, (_, i) => put(text(`m${String(i).padStart(2, "0")}`), `v${i}`)),
      );
      const readers = await Promise.all(Array.from({ length: 12 }, () => store.readSnapshot()));
      const answers = await Promise.all(
        readers.map(async (reader, i) => {
          if (i % 3 === 0) return [await reader.get(text(`m${String(i).padStart(2, "0")}`))];
          const entries = await collect(
            reader.iterate({ gte: text(`m${String(i).padStart(2, "0")}`), lt: text("n"), limit: 3 }),
          );
          return entries.map(([, value]) => value);
        }),
      );
      for (const [i, answer] of answers.entries())
        expect(answer).toEqual(i % 3 === 0 ? [`v${i}`] : [`v${i}`, `v${i + 1}`, `v${i + 2}`]);
      for (const reader of readers) await reader.close();
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
