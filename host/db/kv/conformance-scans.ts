import { b, keysOf, put, storeTestOn, type TestApi } from "./conformance.js";
import { collect, type KvStore } from "./kv.js";

/**
 * What every backend's scans must do, beside the conformance suite of conformance.ts: bytewise
 * order over keys with 0x00 and 0xff, ranges both ways, limits, key-only scans, scans without
 * keys over bounds that are not text (the same values, an empty key buffer each), and batches.
 */
export function scanConformance(
  name: string,
  open: () => Promise<KvStore>,
  { describe, it, expect }: TestApi,
): void {
  describe(`${name} scans`, () => {
    const storeTest = storeTestOn(open, it);

    storeTest("orders keys bytewise, including 0x00 and 0xff, and walks ranges both ways", async (store) => {
      const keys = [
        b(0x01),
        b(0x01, 0x00),
        b(0x01, 0x00, 0x01),
        b(0x01, 0x7f),
        b(0x01, 0x80),
        b(0x01, 0xff),
        b(0x02),
      ];
      await store.batch([...keys].reverse().map((key, i) => put(key, `v${i}`)));
      const forward = await collect(store.iterate({ gte: b(0x01), lt: b(0x02) }));
      expect(keysOf(forward)).toEqual(["01", "0100", "010001", "017f", "0180", "01ff"]);
      const backward = await collect(store.iterate({ gte: b(0x01, 0x00), lt: b(0x01, 0xff), reverse: true }));
      expect(keysOf(backward)).toEqual(["0180", "017f", "010001", "0100"]);
      const limited = await collect(store.iterate({ gte: b(0x01), lt: b(0x03), limit: 3, reverse: true }));
      expect(keysOf(limited)).toEqual(["02", "01ff", "0180"]);
      const keysOnly = await collect(store.iterate({ gte: b(0x01, 0x7f), lt: b(0x01, 0x81), values: false }));
      expect(keysOnly.map(([key]) => key.toString("hex"))).toEqual(["017f", "0180"]);
    });

    storeTest("scans without keys over binary bounds: the same values, counts and order", async (store) => {
      // Bounds and keys with bytes that are not UTF-8 on their own: the range must be exact.
      const keys = [b(0x05, 0x7f), b(0x05, 0x80), b(0x05, 0xc3), b(0x05, 0xc3, 0xa9), b(0x05, 0xff), b(0x06)];
      await store.batch(keys.map((key, i) => put(key, `v${i}`)));
      const gte = b(0x05, 0x80);
      const lt = b(0x05, 0xff);
      const withKeys = await collect(store.iterate({ gte, lt, reverse: true }));
      const keyless = await collect(store.iterate({ gte, lt, reverse: true, keys: false }));
      expect(keyless.map(([, value]) => value)).toEqual(withKeys.map(([, value]) => value));
      expect(keyless.map(([, value]) => value)).toEqual(["v3", "v2", "v1"]);
      expect(keyless.every(([key]) => Buffer.isBuffer(key))).toBe(true);
      const counted = await collect(store.iterate({ gte, lt, keys: false, values: false }));
      expect(counted.map(([, value]) => value)).toEqual(["", "", ""]);
    });

    storeTest(
      "scans without keys in batches, values with line breaks and empty ones included",
      async (store) => {
        const values = ["a", "line\nbreak", "", "\n", "z", '{"json":1}', "last"];
        await store.batch(values.map((value, i) => put(b(0x07, i), value)));
        for (const reverse of [false, true]) {
          const iterator = store.iterate({ gte: b(0x07), lt: b(0x08), reverse, keys: false });
          const seen: string[] = [];
          for (let batch = await iterator.next(2); batch.length > 0; batch = await iterator.next(2))
            seen.push(...batch.map(([, value]) => value));
          await iterator.close();
          expect(seen).toEqual(reverse ? [...values].reverse() : values);
        }
      },
    );

    storeTest("iterates in batches across many entries", async (store) => {
      const many = Array.from({ length: 2500 }, (_, i) => put(b(0x05, i >> 8, i & 0xff), String(i)));
      await store.batch(many);
      const iterator = store.iterate({ gte: b(0x05), lt: b(0x06) });
      const sizes: number[] = [];
      const values: string[] = [];
      for (;;) {
        const entries = await iterator.next(1000);
        if (entries.length === 0) break;
        sizes.push(entries.length);
        values.push(...entries.map(([, v]) => v));
      }
      await iterator.close();
      expect(sizes).toEqual([1000, 1000, 500]);
      expect(values).toEqual(many.map((op) => op.value));
      const last = await store.iterate({ gte: b(0x05), lt: b(0x06), reverse: true }).next(2);
      expect(last.map(([, v]) => v)).toEqual(["2499", "2498"]);
    });

    storeTest(
      "ends a batch of values after about 4 MiB (one entry at least), not at its count",
      async (store) => {
        // A handler reads 4 MiB at most: a batch of 1,000 rows of 3 MiB would hold 3 GB in the host.
        const big = (i: number) => `${i}`.padEnd(3 * 1024 * 1024, "x");
        await store.batch(Array.from({ length: 5 }, (_, i) => put(b(0x07, i), big(i))));
        for (const [reverse, keys] of [
          [false, true],
          [true, false],
        ] as const) {
          const iterator = store.iterate({ gte: b(0x07), lt: b(0x08), reverse, keys });
          const sizes: number[] = [];
          const firsts: string[] = [];
          for (let batch = await iterator.next(1000); batch.length > 0; batch = await iterator.next(1000)) {
            sizes.push(batch.length);
            firsts.push(...batch.map(([, value]) => value.slice(0, 1)));
          }
          await iterator.close();
          expect(Math.max(...sizes)).toBeLessThanOrEqual(2);
          expect(firsts).toEqual(reverse ? ["4", "3", "2", "1", "0"] : ["0", "1", "2", "3", "4"]);
        }
      },
    );
  });
}
