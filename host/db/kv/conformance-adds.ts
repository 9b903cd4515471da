import { put, storeTestOn, type TestApi, text } from "./conformance.js";
import type { KvOperation, KvStore } from "./kv.js";

const add = (key: Buffer, delta: number): KvOperation => ({ type: "add", key, delta });
const del = (key: Buffer): KvOperation => ({ type: "del", key });

/**
 * What every backend's `add` must do, beside the conformance suite of conformance.ts: move the
 * count stored under a key (none: 0) where the write lands, delete it at 0 or less, combine with
 * the batch's other operations on the key in order, and fail a write whose count is not a number
 * without writing any of it.
 */
export function addConformance(
  name: string,
  open: () => Promise<KvStore>,
  { describe, it, expect }: TestApi,
): void {
  describe(`${name} adds`, () => {
    const storeTest = storeTestOn(open, it);

    storeTest("moves a stored count, from none, and deletes it at 0 or less", async (store) => {
      await store.batch([add(text("n1"), 3), add(text("n2"), 1)]);
      expect(await store.getMany([text("n1"), text("n2")])).toEqual(["3", "1"]);
      await store.batch([add(text("n1"), -1), add(text("n2"), -1)]);
      expect(await store.getMany([text("n1"), text("n2")])).toEqual(["2", undefined]);
      await store.batch([add(text("n1"), -5), add(text("n3"), 0)]);
      expect(await store.getMany([text("n1"), text("n3")])).toEqual([undefined, undefined]);
    });

    storeTest("combines with the batch's other operations on the key, in order", async (store) => {
      await store.batch([put(text("a"), "10"), put(text("b"), "10"), put(text("c"), "10")]);
      await store.batch([
        add(text("a"), 2),
        add(text("a"), 3),
        put(text("b"), "1"),
        add(text("b"), 4),
        del(text("c")),
        add(text("c"), 2),
        add(text("d"), 7),
        put(text("d"), "1"),
        add(text("e"), 1),
        del(text("e")),
      ]);
      expect(await store.getMany(["a", "b", "c", "d", "e"].map(text))).toEqual([
        "15",
        "5",
        "2",
        "1",
        undefined,
      ]);
    });

    storeTest("moves a count by the sum of the batch's adds, never by a step between", async (store) => {
      await store.batch([put(text("s"), "5"), put(text("p"), "1")]);
      // Each from the stored count (s, t), a put (p) or a del (q): 5 - 10 + 3 and 0 - 1 + 1 delete.
      await store.batch([
        add(text("s"), -10),
        add(text("s"), 3),
        add(text("t"), -1),
        add(text("t"), 1),
        put(text("p"), "5"),
        add(text("p"), -10),
        add(text("p"), 7),
        del(text("q")),
        add(text("q"), -1),
        add(text("q"), 2),
      ]);
      expect(await store.getMany(["s", "t", "p", "q"].map(text))).toEqual([undefined, undefined, "2", "1"]);
    });

    storeTest("moves counts in a commit, from the latest state, not the snapshot's", async (store) => {
      await store.batch([put(text("k"), "5")]);
      const snapshot = await store.lazySnapshot();
      expect(await snapshot.get(text("k"))).toBe("5");
      await store.batch([put(text("k"), "8")]);
      await store.commit(snapshot, [add(text("k"), 2), put(text("row"), "x")]);
      await snapshot.close();
      expect(await store.getMany([text("k"), text("row")])).toEqual(["10", "x"]);
    });

    storeTest("fails a batch whose added key is not a count, writing none of it", async (store) => {
      await store.batch([put(text("t"), "not a count")]);
      await expect(store.batch([put(text("other"), "1"), add(text("t"), 1)])).rejects.toThrow();
      expect(await store.getMany([text("t"), text("other")])).toEqual(["not a count", undefined]);
    });

    storeTest("refuses an add of anything but a whole number", async (store) => {
      for (const delta of [0.5, Number.NaN, Number.POSITIVE_INFINITY, "1" as unknown as number])
        await expect(store.batch([add(text("x"), delta)])).rejects.toThrow(/whole number/);
    });

    storeTest(
      "refuses an add of anything but a whole number in a commit, writing none of it",
      async (store) => {
        for (const delta of [0.5, Number.NaN]) {
          const snapshot = await store.lazySnapshot();
          try {
            await expect(
              store.commit(snapshot, [put(text("y"), "1"), add(text("x"), delta)]),
            ).rejects.toThrow(/whole number/);
            await expect(
              store.commitAndContinue(snapshot, [put(text("y"), "1"), add(text("x"), delta)], undefined, []),
            ).rejects.toThrow(/whole number/);
          } finally {
            await snapshot.close();
          }
        }
        expect(await store.getMany([text("x"), text("y")])).toEqual([undefined, undefined]);
      },
    );
  });
}
