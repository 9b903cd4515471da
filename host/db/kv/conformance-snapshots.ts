import { NOT_READY } from "../fast-path.js";
import { del, keysOf, put, storeTestOn, type TestApi, text } from "./conformance.js";
import { collect, type KvSnapshot, type KvStore } from "./kv.js";

/**
 * What every backend's snapshots and commits must do, beside the conformance suite of
 * conformance.ts: a snapshot's view is fixed, as of its start, however many read at once; a
 * commit writes atomically; point reads are answered at once where the backend's `supports`
 * manifest says so (and keys a snapshot has read, always); a snapshot outlives a commit exactly
 * when it declares `commitKeepsSnapshot`; and a commit continues with a snapshot that sees it.
 */
export function snapshotConformance(
  name: string,
  open: () => Promise<KvStore>,
  { describe, it, expect }: TestApi,
): void {
  describe(`${name} snapshots`, () => {
    const storeTest = storeTestOn(open, it);

    storeTest("gives snapshots a fixed view; a commit ends one and writes atomically", async (store) => {
      await store.batch([put(text("s1"), "old"), put(text("s2"), "old")]);
      const snapshot = await store.snapshot();
      await store.batch([put(text("s1"), "new"), del(text("s2")), put(text("s3"), "new")]);
      expect(await snapshot.get(text("s1"))).toBe("old");
      expect(await snapshot.get(text("s3"))).toBeUndefined();
      expect(keysOf(await collect(snapshot.iterate({ gte: text("s"), lt: text("t") })))).toEqual(
        [text("s1"), text("s2")].map((k) => k.toString("hex")),
      );
      expect(keysOf(await collect(store.iterate({ gte: text("s"), lt: text("t") })))).toEqual(
        [text("s1"), text("s3")].map((k) => k.toString("hex")),
      );
      await store.commit(snapshot, [put(text("s4"), "committed"), del(text("s1"))]);
      await snapshot.close();
      expect(await store.getMany([text("s1"), text("s4")])).toEqual([undefined, "committed"]);
      const empty = await store.snapshot();
      await store.commit(empty, []);
      await empty.close();
      const reader = await store.snapshot();
      await reader.close();
      await reader.close();
    });

    storeTest("gives each reader the state as of its start, however many read at once", async (store) => {
      const r = text("r");
      await store.batch([put(r, "1")]);
      const first = await store.snapshot();
      const second = await store.snapshot();
      await first.close();
      expect(await second.get(r)).toBe("1");
      await store.batch([put(r, "2")]);
      const third = await store.snapshot();
      expect(await third.get(r)).toBe("2");
      expect(await second.get(r)).toBe("1");
      await second.close();
      expect(await third.get(r)).toBe("2");
      const writing = store.batch([put(r, "3")]);
      const during = await store.snapshot();
      const seenDuring = await during.get(r);
      expect(["2", "3"]).toContain(seenDuring);
      await writing;
      const after = await store.snapshot();
      expect(await after.get(r)).toBe("3");
      expect(await during.get(r)).toBe(seenDuring);
      await store.clear({ gte: r, lt: text("s") });
      const cleared = await store.snapshot();
      expect(await cleared.get(r)).toBeUndefined();
      expect(keysOf(await collect(after.iterate({ gte: r, lt: text("s") })))).toEqual([r.toString("hex")]);
      for (const reader of [third, during, after, cleared]) await reader.close();
      await third.close();
    });

    storeTest(
      "answers a snapshot's point reads at once when it supports syncReads, and keys it has read always",
      async (store) => {
        await store.batch([put(text("p"), "1")]);
        const snapshot = await store.snapshot();
        try {
          if (store.supports.syncReads) {
            expect(snapshot.tryGetSync(text("p"))).toBe("1");
            expect(snapshot.tryGetSync(text("q"))).toBeUndefined();
          } else expect(snapshot.tryGetSync(text("p"))).toBe(NOT_READY);
          expect(await snapshot.get(text("p"))).toBe("1");
          expect(await snapshot.get(text("q"))).toBeUndefined();
          // A key the snapshot has read is answered at once on every backend, as it read it.
          await store.batch([put(text("p"), "2"), put(text("q"), "now here")]);
          expect(snapshot.tryGetSync(text("p"))).toBe("1");
          expect(snapshot.tryGetSync(text("q"))).toBeUndefined();
        } finally {
          await snapshot.close();
        }
      },
    );

    storeTest(
      "keeps a snapshot after a commit exactly when it supports commitKeepsSnapshot",
      async (store) => {
        await store.batch([put(text("c"), "old")]);
        const snapshot = await store.snapshot();
        await store.commit(snapshot, [put(text("c"), "new")]);
        if (store.supports.commitKeepsSnapshot) {
          expect(await snapshot.get(text("c"))).toBe("old");
          await store.commit(snapshot, [put(text("c"), "newer")]);
          expect(await store.get(text("c"))).toBe("newer");
        } else {
          await expect(snapshot.get(text("c"))).rejects.toThrow();
          expect(await store.get(text("c"))).toBe("new");
        }
        await snapshot.close();
      },
    );

    storeTest(
      "continues a commit with a snapshot that sees it and has read the keys asked for",
      async (store) => {
        await store.batch([put(text("w1"), "old"), put(text("w2"), "kept")]);
        const first = await store.lazySnapshot();
        expect(await first.get(text("w1"))).toBe("old");
        // Nothing fails here: each commit continues with a snapshot.
        const continued = (snapshot: KvSnapshot | undefined) => {
          if (snapshot === undefined) throw new Error("The commit did not continue.");
          return snapshot;
        };
        const next = continued(
          await store.commitAndContinue(first, [put(text("w1"), "new"), put(text("w3"), "3")], undefined, [
            text("w1"),
            text("w3"),
            text("absent"),
          ]),
        );
        await first.close();
        try {
          // Read with the commit: answered at once on every backend, as of after the commit.
          expect(next.tryGetSync(text("w1"))).toBe("new");
          expect(next.tryGetSync(text("w3"))).toBe("3");
          expect(next.tryGetSync(text("absent"))).toBeUndefined();
          await store.batch([put(text("w2"), "later")]);
          expect(await next.get(text("w2"))).toBe("kept");
          const last = continued(await store.commitAndContinue(next, [del(text("w3"))], undefined, []));
          await last.close();
          expect(await store.getMany([text("w1"), text("w2"), text("w3")])).toEqual([
            "new",
            "later",
            undefined,
          ]);
        } finally {
          await next.close();
        }
        // On a snapshot that has read nothing yet, as well.
        const unread = await store.lazySnapshot();
        const after = continued(
          await store.commitAndContinue(unread, [put(text("w5"), "5")], undefined, [text("w5")]),
        );
        await unread.close();
        expect(after.tryGetSync(text("w5"))).toBe("5");
        await after.close();
        // A commit that fails leaves no snapshot open and writes nothing.
        await store.batch([put(text("n"), "not a count")]);
        const failing = await store.lazySnapshot();
        expect(await failing.get(text("n"))).toBe("not a count");
        await expect(
          store.commitAndContinue(
            failing,
            [put(text("w4"), "x"), { type: "add", key: text("n"), delta: 1 }],
            undefined,
            [text("w4")],
          ),
        ).rejects.toThrow();
        await failing.close();
        expect(await store.get(text("w4"))).toBeUndefined();
      },
    );
  });
}
