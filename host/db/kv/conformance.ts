import type { describe as Describe, expect as Expect, it as It } from "vitest";
import { NOT_READY } from "../fast-path.js";
import { collect, type KvSnapshot, type KvStore } from "./kv.js";

/** The test functions the suite runs under (the caller's vitest; the suite does not import it). */
export interface TestApi {
  describe: typeof Describe;
  it: typeof It;
  expect: typeof Expect;
}

export const b = (...bytes: number[]) => Buffer.from(bytes);
export const text = (s: string) => Buffer.from(s, "latin1");
export const put = (key: Buffer, value: string) => ({ type: "put" as const, key, value });
const del = (key: Buffer) => ({ type: "del" as const, key });
export const keysOf = (entries: Array<[Buffer, string]>) => entries.map(([key]) => key.toString("hex"));
const ALL = { gte: b(), lt: b(0xff, 0xff, 0xff) };

/** A test on a freshly opened store, closed afterwards whatever happens. */
export function storeTestOn(open: () => Promise<KvStore>, it: typeof It) {
  return (title: string, body: (store: KvStore) => Promise<void>) =>
    it(title, async () => {
      const store = await open();
      try {
        await body(store);
      } finally {
        await store.close();
      }
    });
}

/**
 * The conformance suite every key-value backend runs (STYLE.md: one suite, every backend): point
 * reads, batches and their order, snapshots, commits, clears, argument checks and locks; what a
 * backend's `supports` manifest declares is checked as declared. Scans have their own part
 * (conformance-scans.ts), lazy snapshots theirs (conformance-lazy.ts).
 * `open` gives a fresh, empty store.
 */
export function kvConformance(
  name: string,
  open: () => Promise<KvStore>,
  { describe, it, expect }: TestApi,
): void {
  describe(`${name} conformance`, () => {
    const storeTest = storeTestOn(open, it);

    storeTest("puts, reads, reads many and deletes", async (store) => {
      await store.batch([put(text("a"), "1"), put(text("b"), '{"json":"é ✓ 𝄞"}')]);
      expect(await store.get(text("a"))).toBe("1");
      expect(await store.get(text("b"))).toBe('{"json":"é ✓ 𝄞"}');
      expect(await store.get(text("c"))).toBeUndefined();
      expect(await store.getMany([text("b"), text("c"), text("a")])).toEqual([
        '{"json":"é ✓ 𝄞"}',
        undefined,
        "1",
      ]);
      await store.batch([del(text("a")), del(text("missing"))]);
      expect(await store.get(text("a"))).toBeUndefined();
      expect(await store.getMany([])).toEqual([]);
    });

    storeTest("stores values with quotes, backslashes and placeholders as written", async (store) => {
      const values = [
        `it's`,
        "''",
        "\\",
        "a\\'b",
        String.raw`{"text":"say \"hi\"\n\u0000 C:\\dir\\"}`,
        " E'x' ",
        "$1 $2::text[] $$ $",
        "line\nbreak\ttab",
        "",
      ];
      await store.batch(values.map((value, i) => put(b(0x09, i), value)));
      expect(await store.getMany(values.map((_, i) => b(0x09, i)))).toEqual(values);
      const snapshot = await store.snapshot();
      await store.commit(
        snapshot,
        values.map((value, i) => put(b(0x0a, i), `${value}'\\`)),
      );
      expect(await store.getMany(values.map((_, i) => b(0x0a, i)))).toEqual(
        values.map((value) => `${value}'\\`),
      );
    });

    storeTest("applies a batch in order: a later operation on a key wins", async (store) => {
      await store.batch([
        put(text("k1"), "1"),
        del(text("k1")),
        del(text("k2")),
        put(text("k2"), "2"),
        put(text("k2"), "3"),
      ]);
      expect(await store.getMany([text("k1"), text("k2")])).toEqual([undefined, "3"]);
    });

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

    storeTest("clears a range and nothing outside it", async (store) => {
      await store.batch([
        put(b(0x10), "a"),
        put(b(0x10, 0x01), "b"),
        put(b(0x11), "c"),
        put(b(0x0f, 0xff), "d"),
      ]);
      await store.clear({ gte: b(0x10), lt: b(0x11) });
      expect(keysOf(await collect(store.iterate(ALL)))).toEqual(["0fff", "11"]);
    });

    storeTest("runs locked work and returns its value, releasing the lock when it throws", async (store) => {
      expect(await store.bus.lockAcrossProcesses("lock-a", async () => 42)).toBe(42);
      await expect(
        store.bus.lockAcrossProcesses("lock-a", async () => {
          throw new Error("inside");
        }),
      ).rejects.toThrow("inside");
      expect(await store.bus.lockAcrossProcesses("lock-a", async () => "again")).toBe("again");
    });

    storeTest(
      "outer locks held while inner ones are taken never starve or deadlock the inner ones",
      async (store) => {
        // More outer holders than any pool of lock connections, each taking an inner lock inside,
        // beside as many inner-only holders: with one pool for both, the outer holders would take
        // every connection and wait for an inner lock forever.
        const done: string[] = [];
        const holders = Array.from({ length: 40 }, (_, i) => [
          store.bus.lockAcrossProcesses(
            `outer-${i}`,
            () =>
              store.bus.lockAcrossProcesses(`inner-${i}`, async () => {
                done.push(`outer-${i}`);
              }),
            { outer: true },
          ),
          store.bus.lockAcrossProcesses(`inner-only-${i}`, async () => {
            done.push(`inner-only-${i}`);
          }),
        ]).flat();
        await Promise.all(holders);
        expect(done).toHaveLength(80);
      },
    );

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

    storeTest("refuses malformed arguments before they reach the backend", async (store) => {
      const internal = { code: "internal" };
      await expect(store.get("a" as unknown as Buffer)).rejects.toMatchObject(internal);
      await expect(store.getMany([text("a"), 1 as unknown as Buffer])).rejects.toMatchObject(internal);
      await expect(store.batch([{ type: "put", key: text("a") } as never])).rejects.toMatchObject(internal);
      await expect(store.clear({ gte: text("a") } as never)).rejects.toMatchObject(internal);
      expect(() => store.iterate({ gte: text("a"), lt: text("b"), limit: -1 })).toThrow();
      expect(await store.get(text("a"))).toBeUndefined();
    });
  });
}
