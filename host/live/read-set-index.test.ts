/**
 * The read-set index against the brute-force oracle `readSetIntersects`: random read sets (point
 * reads, ranges that are empty, inverted, identical, open-ended up to 0xff.. or starting at the
 * empty key, keys that are prefixes of others), replaced and removed at random, and random write
 * sets; every answer must equal the oracle's.
 */
import { describe, expect, it, vi } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
import { type ReadSet, readSetIntersects } from "../db/index.js";
import { RangeTree } from "./range-tree.js";
import { ReadSetIndex } from "./read-set-index.js";

/** A deterministic generator, so that a failure can be replayed. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Short keys over a small alphabet (with 0x00 and 0xff), so that they collide and nest. */
function randomKey(random: () => number): Buffer {
  const alphabet = [0x00, 0x01, 0x11, 0x7f, 0x80, 0xfe, 0xff];
  const length = Math.floor(random() * 4);
  return Buffer.from(
    Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)] as number),
  );
}

function randomReadSet(random: () => number, shared: ReadSet["ranges"]): ReadSet {
  const readSet: ReadSet = { ranges: [], keys: [] };
  const ranges = Math.floor(random() * 4);
  for (let i = 0; i < ranges; i++) {
    const pick = random();
    if (pick < 0.15 && shared.length > 0) {
      readSet.ranges.push(shared[Math.floor(random() * shared.length)] as ReadSet["ranges"][number]);
    } else if (pick < 0.25) {
      readSet.ranges.push({ start: randomKey(random), end: Buffer.from([0xff, 0xff, 0xff, 0xff]) });
    } else if (pick < 0.3) {
      readSet.ranges.push({ start: Buffer.alloc(0), end: randomKey(random) });
    } else {
      // Sometimes empty or inverted: those contain nothing.
      readSet.ranges.push({ start: randomKey(random), end: randomKey(random) });
    }
  }
  const keys = Math.floor(random() * 3);
  for (let i = 0; i < keys; i++) readSet.keys.push(randomKey(random));
  if (random() < 0.1 && readSet.keys[0]) readSet.keys.push(Buffer.from(readSet.keys[0]));
  return readSet;
}

/** The same read set in new buffers. */
function copyOf(readSet: ReadSet): ReadSet {
  return {
    ranges: readSet.ranges.map(({ start, end }) => ({ start: Buffer.from(start), end: Buffer.from(end) })),
    keys: readSet.keys.map((key) => Buffer.from(key)),
  };
}

describe("ReadSetIndex", () => {
  it("finds exactly the subscriptions readSetIntersects finds, through adds, replacements and removals", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const random = generator(seed);
      const index = new ReadSetIndex<number>();
      const oracle = new Map<number, ReadSet | undefined>();
      const shared = Array.from({ length: 3 }, () => ({ start: randomKey(random), end: randomKey(random) }));
      for (let step = 0; step < 300; step++) {
        const subscription = Math.floor(random() * 40);
        const action = random();
        const current = oracle.get(subscription);
        if (action < 0.15 && current) {
          // A re-run that read the same as the run before it, in fresh buffers.
          const again = copyOf(current);
          index.set(subscription, again);
          oracle.set(subscription, again);
        } else if (action < 0.6) {
          const readSet = random() < 0.1 ? undefined : randomReadSet(random, shared);
          index.set(subscription, readSet);
          oracle.set(subscription, readSet);
        } else if (action < 0.8) {
          index.delete(subscription);
          oracle.delete(subscription);
        }
        // Sometimes many keys, each in many ranges: past the stabs' budget, ranges are checked instead.
        const writes = random() < 0.3 ? 20 + Math.floor(random() * 80) : 1 + Math.floor(random() * 3);
        const written = Array.from({ length: writes }, () => randomKey(random));
        const expected = [...oracle]
          .filter(([, readSet]) => !readSet || readSetIntersects(readSet, written))
          .map(([s]) => s)
          .sort((a, b) => a - b);
        const found = [...index.touched(written)].sort((a, b) => a - b);
        expect(found, `seed ${seed} step ${step}`).toEqual(expected);
        expect(index.size).toBe(oracle.size);
      }
      expect([...index.touched(undefined)].sort((a, b) => a - b)).toEqual(
        [...oracle.keys()].sort((a, b) => a - b),
      );
    }
  });

  it("leaves the index as it is when a re-run read what the run before it read", () => {
    const index = new ReadSetIndex<string>();
    const wide: ReadSet = {
      ranges: Array.from({ length: 3000 }, (_, i) => ({
        start: Buffer.from(`r${String(i).padStart(5, "0")}`),
        end: Buffer.from(`r${String(i).padStart(5, "0")}\xff`),
      })),
      keys: [Buffer.from("k1"), Buffer.from("k2"), Buffer.from("k1")],
    };
    index.set("a", wide);
    const inserts = vi.spyOn(RangeTree.prototype, "insert");
    const removals = vi.spyOn(RangeTree.prototype, "remove");
    try {
      index.set("a", copyOf(wide));
      expect(inserts).not.toHaveBeenCalled();
      expect(removals).not.toHaveBeenCalled();
      expect([...index.touched([Buffer.from("r01234")])]).toEqual(["a"]);
      // One range fewer: the index follows.
      index.set("a", { ranges: wide.ranges.slice(1), keys: wide.keys });
      expect(inserts).toHaveBeenCalledTimes(2999);
      expect([...index.touched([Buffer.from("r00000")])]).toEqual([]);
      expect([...index.touched([Buffer.from("k2")])]).toEqual(["a"]);
    } finally {
      inserts.mockRestore();
      removals.mockRestore();
    }
  });

  it("keeps a range read many times once, and stops stabbing when checking each range costs less", () => {
    const index = new ReadSetIndex<number>();
    const table = { start: Buffer.from("t"), end: Buffer.from("u") };
    // A query that scanned the whole table 4,000 times (take(0) each time), in 26 subscriptions.
    const inserts = vi.spyOn(RangeTree.prototype, "insert");
    const stabs = vi.spyOn(RangeTree.prototype, "stab");
    try {
      for (let s = 0; s < 26; s++)
        index.set(s, {
          ranges: [
            ...Array.from({ length: 4000 }, () => table),
            { start: Buffer.from("t5"), end: Buffer.from("t7") },
            { start: Buffer.from("a"), end: Buffer.from("b") },
            { start: Buffer.from("b"), end: Buffer.from("c") },
          ],
          keys: [],
        });
      // Each is two ranges: the table's (with the part inside it), and a-b joined with b-c.
      expect(inserts).toHaveBeenCalledTimes(52);
      const written = Array.from({ length: 1000 }, (_, i) => Buffer.from(`t${String(i).padStart(4, "0")}`));
      expect([...index.touched(written)].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 26 }, (_, s) => s),
      );
      // 52 ranges and 1,000 keys: 1,520 visits allowed, 26 found per key: some 60 of 1,000 stabs.
      expect(stabs.mock.calls.length).toBeLessThan(100);
      expect([...index.touched([Buffer.from("bb")])]).toHaveLength(26);
      expect([...index.touched([Buffer.from("c")])]).toEqual([]);
    } finally {
      inserts.mockRestore();
      stabs.mockRestore();
    }
  });

  it("holds nothing once every subscription is removed", () => {
    const index = new ReadSetIndex<string>();
    const all = { start: Buffer.alloc(0), end: Buffer.from([0xff]) };
    index.set("a", { ranges: [all, all], keys: [Buffer.from("k"), Buffer.from("k")] });
    index.set("b", undefined);
    expect([...index.touched([Buffer.from("k")])].sort()).toEqual(["a", "b"]);
    index.set("b", { ranges: [], keys: [] });
    expect([...index.touched([Buffer.from([0xff])])]).toEqual([]);
    index.delete("a");
    index.delete("b");
    index.delete("never");
    expect(index.size).toBe(0);
    expect([...index.touched([Buffer.from("k")])]).toEqual([]);
  });
});

describe("RangeTree", () => {
  it("stabs like a linear scan over thousands of ranges, with removals", () => {
    const random = generator(7);
    const tree = new RangeTree<number>();
    const live = new Map<number, { start: string; end: string; handle: ReturnType<typeof tree.insert> }>();
    const text = () => randomKey(random).toString("latin1");
    for (let i = 0; i < 3000; i++) {
      const start = text();
      const end = random() < 0.5 ? `${start}\u00ff` : text();
      live.set(i, { start, end, handle: tree.insert(start, end, i) });
      if (random() < 0.3) {
        const victim = Math.floor(random() * i);
        const range = live.get(victim);
        if (range) {
          tree.remove(range.handle);
          live.delete(victim);
        }
      }
      if (i % 50 === 0) {
        const key = text();
        const found: number[] = [];
        tree.stab(key, (value) => found.push(value));
        const expected = [...live].filter(([, r]) => r.start <= key && key < r.end).map(([v]) => v);
        expect(found.sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
      }
    }
    expect(tree.size).toBe(live.size);
  });
});

describe("ReadSetIndex past its checks", () => {
  it("answers every subscription once finding the touched ones would take more than LIMITS.liveCommitVisits", () => {
    // 2,000 subscriptions watching the same 64 gapped ranges, and a commit of 1,024 keys inside
    // them: each key is in 2,000 ranges, and finding them held the main thread hundreds of ms.
    const index = new ReadSetIndex<number>();
    const key = (r: number, k: number) => Buffer.from(`i${String(r).padStart(3, "0")}${k}`);
    for (let s = 0; s < 2000; s++)
      index.set(s, {
        ranges: Array.from({ length: 64 }, (_, r) => ({ start: key(r, 0), end: key(r, 5) })),
        keys: [],
      });
    index.set(2000, { ranges: [{ start: Buffer.from("z"), end: Buffer.from("zz") }], keys: [] });
    const written = Array.from({ length: 1024 }, (_, i) => key(i % 64, 1 + (i % 3)));
    const stab = RangeTree.prototype.stab;
    let visits = 0;
    const stabs = vi.spyOn(RangeTree.prototype, "stab").mockImplementation(function (
      this: RangeTree<number>,
      at,
      visit,
      stepped,
    ) {
      return stab.call(
        this,
        at,
        (subscription) => {
          visits++;
          visit(subscription);
        },
        stepped,
      );
    });
    try {
      expect(index.touched(written).size).toBe(2001);
      expect(visits).toBeLessThanOrEqual(LIMITS.liveCommitVisits + 1);
      // A commit within the checks is still answered exactly.
      expect([...index.touched([Buffer.from("za")])]).toEqual([2000]);
      expect([...index.touched([key(3, 7)])]).toEqual([]);
    } finally {
      stabs.mockRestore();
    }
  });

  it("still answers exactly when checking each range against the written keys is cheap", () => {
    // 17 users watching one table, 1,700 others one row each, and a commit of 1,000 rows in the
    // table: stabbing passes its steps, checking 1,717 ranges costs little, so 17 re-run, not 1,717.
    const index = new ReadSetIndex<number>();
    for (let s = 0; s < 17; s++)
      index.set(s, { ranges: [{ start: Buffer.from("t"), end: Buffer.from("u") }], keys: [] });
    for (let s = 17; s < 1717; s++) {
      const row = Buffer.from(`r${String(s).padStart(5, "0")}`);
      index.set(s, { ranges: [{ start: row, end: Buffer.concat([row, Buffer.from([0])]) }], keys: [] });
    }
    const written = Array.from({ length: 1000 }, (_, i) => Buffer.from(`t${String(i).padStart(4, "0")}`));
    expect([...index.touched(written)].sort((a, b) => a - b)).toEqual(
      Array.from({ length: 17 }, (_, s) => s),
    );
  });

  it("counts the tree's nodes a written key walks, found or not", () => {
    const index = new ReadSetIndex<number>();
    for (let s = 0; s < 3000; s++) {
      const row = Buffer.from(`r${String(s).padStart(5, "0")}`);
      index.set(s, { ranges: [{ start: row, end: Buffer.concat([row, Buffer.from([0])]) }], keys: [] });
    }
    // Keys between the ranges: nothing found, each a walk down the tree.
    const written = Array.from({ length: 20_000 }, (_, i) =>
      Buffer.from(`r${String(i % 3000).padStart(5, "0")}\x01`),
    );
    let steps = 0;
    const stab = RangeTree.prototype.stab;
    const stabs = vi.spyOn(RangeTree.prototype, "stab").mockImplementation(function (
      this: RangeTree<number>,
      at,
      found,
      stepped,
    ) {
      return stab.call(this, at, found, () => {
        steps++;
        stepped?.();
      });
    });
    try {
      expect([...index.touched(written)]).toEqual([]);
      expect(steps).toBeGreaterThan(0);
      expect(steps).toBeLessThanOrEqual(LIMITS.liveCommitVisits + 1);
    } finally {
      stabs.mockRestore();
    }
  });
});
