import type { describe as Describe, expect as Expect, it as It } from "vitest";
import { collect, type KvStore } from "./kv.js";

/** The test functions the suite runs under (the caller's vitest; the suite does not import it). */
export interface TestApi {
  describe: typeof Describe;
  it: typeof It;
  expect: typeof Expect;
}

export const b = (...bytes: number[]) => Buffer.from(bytes);
export const text = (s: string) => Buffer.from(s, "latin1");
export const put = (key: Buffer, value: string) => ({ type: "put" as const, key, value });
export const del = (key: Buffer) => ({ type: "del" as const, key });
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
 * reads, batches and their order, clears, argument checks and locks. Scans have their own part
 * (conformance-scans.ts), snapshots and commits theirs (conformance-snapshots.ts), lazy snapshots
 * theirs (conformance-lazy.ts). `open` gives a fresh, empty store.
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
