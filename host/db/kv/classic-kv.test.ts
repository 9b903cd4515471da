import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClassicLevel } from "classic-level";
import { describe, expect, it, vi } from "vitest";
import { foldBatch } from "./batch-fold.js";
import { ClassicKv } from "./classic-kv.js";
import { kvConformance } from "./conformance.js";
import { addConformance } from "./conformance-adds.js";
import { lazySnapshotConformance } from "./conformance-lazy.js";
import { scanConformance } from "./conformance-scans.js";
import { snapshotConformance } from "./conformance-snapshots.js";
import { collect, type KvOperation } from "./kv.js";

const openClassic = async () => {
  const dir = await mkdtemp(join(tmpdir(), "platform-kv-"));
  const store = await ClassicKv.open(dir);
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await rm(dir, { recursive: true, force: true });
  };
  return store;
};

kvConformance("classic-level store", openClassic, { describe, it, expect });
snapshotConformance("classic-level store", openClassic, { describe, it, expect });
lazySnapshotConformance("classic-level store", openClassic, { describe, it, expect });
scanConformance("classic-level store", openClassic, { describe, it, expect });
addConformance("classic-level store", openClassic, { describe, it, expect });

describe("a batch of many operations (an import's)", () => {
  it("lands whole though handed over in chunks: a reader meanwhile sees none of it or all", async () => {
    const store = await openClassic();
    try {
      const key = (i: number) => Buffer.from(`k${String(i).padStart(6, "0")}`);
      await store.batch([{ type: "put", key: key(0), value: "old" }]);
      const operations = Array.from({ length: 60_000 }, (_, i) => ({
        type: "put" as const,
        key: key(i),
        value: `v${i}`,
      }));
      let done = false;
      const writing = store.batch(operations).then(() => {
        done = true;
      });
      const seen: string[] = [];
      // Readers in the turns the batch leaves free: the first and last key agree every time.
      while (!done) {
        const snapshot = await store.snapshot();
        try {
          const [first, last] = [await snapshot.get(key(0)), await snapshot.get(key(59_999))];
          seen.push(
            first === "old" && last === undefined
              ? "before"
              : first === "v0" && last === "v59999"
                ? "after"
                : "torn",
          );
        } finally {
          await snapshot.close();
        }
      }
      await writing;
      expect(seen).not.toContain("torn");
      expect(seen).toContain("before");
      expect(await store.get(key(59_999))).toBe("v59999");
    } finally {
      await store.close();
    }
  });

  it("with adds (a mutation's counts), lands as the same batch handed over whole would", async () => {
    const store = await openClassic();
    try {
      const keyOf = (i: number) => Buffer.from(`c${String(i).padStart(5, "0")}`);
      const stored = new Map<string, string>();
      for (let i = 0; i < 1500; i += 2) stored.set(keyOf(i).toString("latin1"), String(1 + (i % 7)));
      await store.batch(
        [...stored].map(([key, value]) => ({ type: "put", key: Buffer.from(key, "latin1"), value })),
      );
      // 9,000 puts, dels and adds over 1,500 keys, some stored: puts then adds, adds then a put,
      // adds alone, adds summing to 0 or less.
      let seed = 7;
      const random = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed % n;
      };
      const operations: KvOperation[] = Array.from({ length: 9000 }, () => {
        const key = keyOf(random(1500));
        const kind = random(10);
        if (kind < 2) return { type: "put", key, value: String(random(5)) };
        if (kind < 3) return { type: "del", key };
        return { type: "add", key, delta: random(7) - 3 };
      });
      const expected = new Map(stored);
      for (const op of foldBatch(operations, (key) => stored.get(key.toString("latin1"))))
        if (op.type === "put") expected.set(op.key.toString("latin1"), op.value);
        else expected.delete(op.key.toString("latin1"));
      await store.batch(operations);
      const landed = await collect(store.iterate({ gte: keyOf(0), lt: keyOf(1500) }));
      expect(new Map(landed.map(([key, value]) => [key.toString("latin1"), value]))).toEqual(expected);
    } finally {
      await store.close();
    }
  });

  it("with adds, is handed over in chunks too: other work runs between them", async () => {
    const store = await openClassic();
    const original = ClassicLevel.prototype.batch;
    let ticks = 0;
    let ticksAtWrite = -1;
    let wholeArrays = 0;
    const spy = vi.spyOn(ClassicLevel.prototype, "batch").mockImplementation(function (
      this: ClassicLevel<Buffer, string>,
      ...args: unknown[]
    ) {
      if (args.length > 0) wholeArrays++;
      const batch = (original as (...a: unknown[]) => unknown).apply(this, args);
      if (args.length === 0) {
        const chained = batch as { write: (...a: unknown[]) => Promise<void> };
        const write = chained.write.bind(chained);
        chained.write = (...a: unknown[]) => {
          ticksAtWrite = ticks;
          return write(...a);
        };
      }
      return batch as never;
    });
    let done = false;
    const tick = () => {
      ticks++;
      if (!done) setImmediate(tick);
    };
    try {
      const operations: KvOperation[] = Array.from({ length: 12_000 }, (_, i) =>
        i % 3 === 0
          ? { type: "add", key: Buffer.from(`n${(i / 3) % 400}`), delta: 1 }
          : { type: "put", key: Buffer.from(`r${String(i).padStart(6, "0")}`), value: "x" },
      );
      setImmediate(tick);
      await store.batch(operations);
      done = true;
      expect(wholeArrays).toBe(0);
      // Folded, settled and handed over 2,000 operations a turn: several turns of other work first.
      expect(ticksAtWrite).toBeGreaterThanOrEqual(5);
      expect(await store.get(Buffer.from("n7"))).toBe("10");
    } finally {
      done = true;
      spy.mockRestore();
      await store.close();
    }
  });
});
