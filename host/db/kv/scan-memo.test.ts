import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LIMITS } from "../../../sdk/protocol/index.js";
import { NOT_READY } from "../fast-path.js";
import { ClassicKv } from "./classic-kv.js";
import type { KeptScan, KvIterateOptions, KvIterator, KvSnapshot } from "./kv.js";
import { ScanMemo } from "./scan-memo.js";

const text = (value: string) => Buffer.from(value);

/** An iterator over `entries`, as a backend's would return them. */
function arrayIterator(entries: Array<[Buffer, string]>): KvIterator {
  let at = 0;
  return {
    next: async (max) => {
      const batch = entries.slice(at, at + max);
      at += batch.length;
      return batch;
    },
    close: async () => {},
  };
}

/** A lookup's entries, or NOT_READY. */
function entriesOf(kept: KeptScan | typeof NOT_READY | undefined) {
  return kept === undefined || kept === NOT_READY ? NOT_READY : kept.entries;
}

const ENTRIES: Array<[Buffer, string]> = ["a", "b", "c", "d"].map((k) => [text(k), `value ${k}`]);
const RANGE: KvIterateOptions = { gte: text("a"), lt: text("z") };

/** Scans `options` through `memo` taking `take` entries in batches of `batch`, then closes. */
async function scanThrough(memo: ScanMemo, options: KvIterateOptions, take: number, batch = take) {
  const iterator = memo.recording("o", options, arrayIterator(ENTRIES));
  const seen: Array<[Buffer, string]> = [];
  while (seen.length < take) {
    const next = await iterator.next(batch);
    if (next.length === 0) break;
    seen.push(...next);
  }
  await iterator.close();
  return seen;
}

describe("ScanMemo", () => {
  it("answers a reader that takes no more than an earlier scan of the same range returned", async () => {
    const memo = new ScanMemo(1 << 20);
    expect(entriesOf(memo.lookup("o", RANGE, 1))).toBe(NOT_READY);
    await scanThrough(memo, RANGE, 2);
    expect(entriesOf(memo.lookup("o", RANGE, 2))).toEqual(ENTRIES.slice(0, 2));
    expect(entriesOf(memo.lookup("o", RANGE, 1))).toEqual(ENTRIES.slice(0, 2));
    // The scan stopped before the end of the range: a reader taking more must scan.
    expect(entriesOf(memo.lookup("o", RANGE, 3))).toBe(NOT_READY);
    expect(entriesOf(memo.lookup("o", RANGE, Infinity))).toBe(NOT_READY);
  });

  it("answers any reader once a scan reached the end of the range", async () => {
    const memo = new ScanMemo(1 << 20);
    await scanThrough(memo, RANGE, 10, 3);
    expect(entriesOf(memo.lookup("o", RANGE, Infinity))).toEqual(ENTRIES);
    expect(entriesOf(memo.lookup("o", RANGE, 100))).toEqual(ENTRIES);
  });

  it("keeps scans apart by range, direction and what they read, however the bounds' bytes line up", async () => {
    const memo = new ScanMemo(1 << 20);
    await scanThrough(memo, { gte: text("a\u0000"), lt: text("b") }, 10);
    expect(entriesOf(memo.lookup("o", { gte: text("a"), lt: text("\u0000b") }, 1))).toBe(NOT_READY);
    expect(entriesOf(memo.lookup("o", { gte: text("a\u0000"), lt: text("b"), reverse: true }, 1))).toBe(
      NOT_READY,
    );
    expect(entriesOf(memo.lookup("o", { gte: text("a\u0000"), lt: text("b"), keys: false }, 1))).toBe(
      NOT_READY,
    );
    expect(entriesOf(memo.lookup("o", { gte: text("a\u0000"), lt: text("b"), values: false }, 1))).toBe(
      NOT_READY,
    );
    expect(entriesOf(memo.lookup("o", { gte: text("a\u0000"), lt: text("b") }, 1))).toEqual(ENTRIES);
  });

  it("keeps no scan with a limit of its own, and none past its size", async () => {
    const memo = new ScanMemo(300);
    await scanThrough(memo, Object.assign({ limit: 4 }, RANGE), 4);
    expect(entriesOf(memo.lookup("o", Object.assign({ limit: 4 }, RANGE), 1))).toBe(NOT_READY);
    // Four entries and their overhead are more than 300 bytes.
    await scanThrough(memo, RANGE, 10);
    expect(entriesOf(memo.lookup("o", RANGE, 1))).toBe(NOT_READY);
    // One entry fits.
    await scanThrough(memo, RANGE, 1);
    expect(entriesOf(memo.lookup("o", RANGE, 1))).toEqual(ENTRIES.slice(0, 1));
  });
});

describe("ScanMemo's owners and bounds", () => {
  it("answers an owner only from its own scans, and one owner's fill leaves another's room", async () => {
    const memo = new ScanMemo(400);
    await scanThrough(memo, RANGE, 1);
    expect(entriesOf(memo.lookup("o", RANGE, 1))).toEqual(ENTRIES.slice(0, 1));
    expect(entriesOf(memo.lookup("other", RANGE, 1))).toBe(NOT_READY);
    const iterator = memo.recording("other", { gte: text("b"), lt: text("z") }, arrayIterator(ENTRIES));
    await iterator.next(1);
    await iterator.close();
    expect(entriesOf(memo.lookup("other", { gte: text("b"), lt: text("z") }, 1))).toEqual(
      ENTRIES.slice(0, 1),
    );
    expect(entriesOf(memo.lookup("o", { gte: text("b"), lt: text("z") }, 1))).toBe(NOT_READY);
  });

  it("charges a scan's bounds, and keeps none whose bounds are long", async () => {
    // An equality on a 2 MB value that matches nothing: it used to be charged 64 bytes.
    const long = { gte: Buffer.alloc(600, 1), lt: Buffer.alloc(600, 2) };
    const memo = new ScanMemo(1 << 30);
    const iterator = memo.recording("o", long, arrayIterator([]));
    await iterator.next(1);
    await iterator.close();
    expect(entriesOf(memo.lookup("o", long, 1))).toBe(NOT_READY);
    const small = new ScanMemo(64 + 2 * 500 - 1);
    const bounds = { gte: Buffer.alloc(250, 1), lt: Buffer.alloc(250, 2) };
    const kept = small.recording("o", bounds, arrayIterator([]));
    await kept.next(1);
    await kept.close();
    expect(entriesOf(small.lookup("o", bounds, 1))).toBe(NOT_READY);
  });

  it("answers no one from a scan nobody read for a second", async () => {
    const now = vi.spyOn(performance, "now");
    try {
      now.mockReturnValue(1000);
      const memo = new ScanMemo(1 << 20);
      await scanThrough(memo, RANGE, 10);
      now.mockReturnValue(1900);
      expect(entriesOf(memo.lookup("o", RANGE, 1))).toEqual(ENTRIES);
      now.mockReturnValue(2800);
      expect(entriesOf(memo.lookup("o", RANGE, 1))).toEqual(ENTRIES);
      now.mockReturnValue(3801);
      expect(entriesOf(memo.lookup("o", RANGE, 1))).toBe(NOT_READY);
      // Forgotten, it makes room: the next scan of the range is kept again.
      await scanThrough(memo, RANGE, 10);
      expect(entriesOf(memo.lookup("o", RANGE, 1))).toEqual(ENTRIES);
    } finally {
      now.mockRestore();
    }
  });
});

it("keeps at most LIMITS.scanMemoScans scans of one owner, however small", async () => {
  const memo = new ScanMemo(1 << 30);
  const empty = () => arrayIterator([]);
  for (let i = 0; i <= LIMITS.scanMemoScans; i++) {
    const iterator = memo.recording("o", { gte: text(`k${i}`), lt: text(`k${i}~`) }, empty());
    await iterator.next(1);
    await iterator.close();
  }
  expect(entriesOf(memo.lookup("o", { gte: text("k0"), lt: text("k0~") }, 1))).toEqual([]);
  const last = LIMITS.scanMemoScans;
  expect(entriesOf(memo.lookup("o", { gte: text(`k${last}`), lt: text(`k${last}~`) }, 1))).toBe(NOT_READY);
});

it("makes room for a new scan by forgetting the ones nobody read for a second, whoever kept them", async () => {
  const now = vi.spyOn(performance, "now");
  try {
    now.mockReturnValue(1000);
    const memo = new ScanMemo(1 << 30, { ownerScans: 4, totalScans: 8, totalBytes: 1 << 30 });
    const keep = async (owner: string, i: number) => {
      const iterator = memo.recording(owner, { gte: text(`k${i}`), lt: text(`k${i}~`) }, arrayIterator([]));
      await iterator.next(1);
      await iterator.close();
    };
    const kept = (owner: string, i: number) =>
      entriesOf(memo.lookup(owner, { gte: text(`k${i}`), lt: text(`k${i}~`) }, 1)) !== NOT_READY;
    // Two owners fill the memo and leave it unread.
    for (let i = 0; i < 4; i++) await keep("filler-1", i);
    for (let i = 4; i < 8; i++) await keep("filler-2", i);
    await keep("reader", 8);
    expect(kept("reader", 8)).toBe(false);
    // A second on, what they kept answers no one, and goes to make room.
    now.mockReturnValue(2001);
    await keep("reader", 8);
    expect(kept("reader", 8)).toBe(true);
    expect(kept("filler-1", 0)).toBe(false);
    // What is read stays.
    now.mockReturnValue(2500);
    expect(kept("reader", 8)).toBe(true);
    expect(memo.keeps("reader", { gte: text("k8"), lt: text("k8~") }, 0)).toBe(true);
    expect(memo.keeps("reader", { gte: text("k8"), lt: text("k8~") }, 5)).toBe(true);
  } finally {
    now.mockRestore();
  }
});

it("keeps nothing once retired, and answers no one", async () => {
  const memo = new ScanMemo(1 << 20);
  await scanThrough(memo, RANGE, 2);
  expect(memo.keeps("o", RANGE, 2)).toBe(true);
  expect(memo.keeps("o", RANGE, 3)).toBe(false);
  memo.retire();
  expect(entriesOf(memo.lookup("o", RANGE, 1))).toBe(NOT_READY);
  await scanThrough(memo, RANGE, 10);
  expect(entriesOf(memo.lookup("o", RANGE, 1))).toBe(NOT_READY);
  expect(memo.holdsAny("o")).toBe(false);
});

describe("scan memos of the embedded store", () => {
  let dir: string;
  let store: ClassicKv;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "platform-memo-"));
    store = await ClassicKv.open(dir);
    await store.batch(ENTRIES.map(([key, value]) => ({ type: "put", key, value })));
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const scanAll = async (snapshot: KvSnapshot) => {
    const iterator = snapshot.iterate(RANGE);
    const all: Array<[Buffer, string]> = [];
    for (let batch = await iterator.next(10); batch.length > 0; batch = await iterator.next(10))
      all.push(...batch);
    await iterator.close();
    return all;
  };

  it("answers a reader that starts before the next write with what an earlier reader's scan found", async () => {
    const first = await store.readSnapshot();
    expect(entriesOf(first.tryScanSync?.(RANGE, 1))).toBe(NOT_READY);
    const found = await scanAll(first);
    await first.close();
    const second = await store.readSnapshot();
    expect(entriesOf(second.tryScanSync?.(RANGE, Infinity))).toEqual(found);
    await second.close();
  });

  it("never answers a reader that starts after a write from a scan made before it", async () => {
    const before = await store.readSnapshot();
    const old = await scanAll(before);
    await store.batch([
      { type: "put", key: text("bb"), value: "new" },
      { type: "del", key: text("c") },
    ]);
    const after = await store.readSnapshot();
    expect(entriesOf(after.tryScanSync?.(RANGE, 1))).toBe(NOT_READY);
    const now = await scanAll(after);
    expect(now.map(([key]) => key.toString())).toEqual(["a", "b", "bb", "d"]);
    // The reader from before the write keeps its own view, memo included.
    expect(entriesOf(before.tryScanSync?.(RANGE, Infinity))).toEqual(old);
    expect(entriesOf(after.tryScanSync?.(RANGE, Infinity))).toEqual(now);
    await before.close();
    await after.close();
  });

  it("passes on the scans of ranges the writes left alone to the next snapshot, and only those", async () => {
    const other: KvIterateOptions = { gte: text("z0"), lt: text("z9") };
    const before = await store.readSnapshot();
    const found = await scanAll(before);
    const iterator = before.iterate(other);
    while ((await iterator.next(10)).length > 0);
    await iterator.close();
    await before.close();
    // Two writes between the snapshots, neither in [a, z), the second in [z0, z9): the scan of
    // the first range is passed on, the other's is not.
    await store.batch([{ type: "put", key: text("zz"), value: "outside both" }]);
    await store.batch([{ type: "put", key: text("z5"), value: "inside [z0, z9)" }]);
    const after = await store.readSnapshot();
    expect(entriesOf(after.tryScanSync?.(RANGE, Infinity))).toEqual(found);
    expect(entriesOf(after.tryScanSync?.(other, 1))).toBe(NOT_READY);
    await after.close();
    // A clear over the range, then a delete in it: neither is answered from before.
    await store.clear({ gte: text("d"), lt: text("e") });
    const cleared = await store.readSnapshot();
    expect(entriesOf(cleared.tryScanSync?.(RANGE, 1))).toBe(NOT_READY);
    expect((await scanAll(cleared)).map(([key]) => key.toString())).toEqual(["a", "b", "c"]);
    await cleared.close();
    await store.batch([{ type: "del", key: text("a") }]);
    const deleted = await store.readSnapshot();
    expect(entriesOf(deleted.tryScanSync?.(RANGE, 1))).toBe(NOT_READY);
    expect((await scanAll(deleted)).map(([key]) => key.toString())).toEqual(["b", "c"]);
    await deleted.close();
  });

  it("lends no memo across a write in flight: a reader starting during it scans its own view", async () => {
    const reader = await store.readSnapshot();
    await scanAll(reader);
    const write = store.batch([{ type: "put", key: text("ab"), value: "during" }]);
    const during = await store.readSnapshot();
    expect(entriesOf(during.tryScanSync?.(RANGE, 1))).toBe(NOT_READY);
    await write;
    await Promise.all([reader.close(), during.close()]);
  });
});
