import { describe, expect, it } from "vitest";
import { NOT_READY } from "../fast-path.js";
import { PostgresScanMemos, pointRange } from "./postgres-scan-memos.js";

const text = (value: string) => Buffer.from(value);

/** Keeps a scan of `owner` in `memos`' memo of the view named `name`; false when that view keeps nothing. */
function keepIn(memos: PostgresScanMemos, name: string, owner = "o"): boolean {
  const memo = memos.memoOf(name);
  if (memo === undefined) return false;
  memo.scans.keepScan(owner, pointRange(text("k")), { entries: [[text("k"), "v"]], complete: true });
  return true;
}

function keptIn(memos: PostgresScanMemos, name: string, owner = "o"): boolean {
  const memo = memos.memoOf(name);
  return memo !== undefined && memo.scans.lookup(owner, pointRange(text("k")), 1) !== NOT_READY;
}

describe("PostgresScanMemos", () => {
  it("keeps reads for the latest view only, by its exact name", () => {
    const memos = new PostgresScanMemos();
    expect(keepIn(memos, "100.5/10:12:10,11")).toBe(true);
    expect(keptIn(memos, "100.5/10:12:10,11")).toBe(true);
    // One of the transactions in progress finished: a later view, kept apart.
    expect(keptIn(memos, "100.5/10:12:10")).toBe(false);
    // The earlier view is gone, and views before it keep nothing.
    expect(keptIn(memos, "100.5/10:12:10,11")).toBe(false);
    expect(keepIn(memos, "100.5/10:12:10,11")).toBe(false);
    expect(keepIn(memos, "100.5/9:11:9")).toBe(false);
    expect(keepIn(memos, "100.5/12:13:")).toBe(true);
    expect(keptIn(memos, "100.5/12:13:")).toBe(true);
  });

  it("takes a new run of the server as a later view, whatever its transaction ids", () => {
    const memos = new PostgresScanMemos();
    expect(keepIn(memos, "100.5/500:500:")).toBe(true);
    // Restarted, or restored from a backup: ids below the ones seen may be given out again.
    expect(keptIn(memos, "200.25/400:400:")).toBe(false);
    expect(keepIn(memos, "200.25/400:400:")).toBe(true);
    expect(keptIn(memos, "200.25/400:400:")).toBe(true);
    expect(keptIn(memos, "100.5/500:500:")).toBe(false);
  });

  it("keeps nothing for views without a name it understands, nor after a lost connection", () => {
    const memos = new PostgresScanMemos();
    for (const name of ["", "10:12:", "x/10:12:", "100/10:12:a"]) expect(keepIn(memos, name)).toBe(false);
    expect(keepIn(memos, "100/10:12:")).toBe(true);
    const before = memos.memoOf("100/10:12:");
    memos.forget();
    expect(before?.scans.lookup("o", pointRange(text("k")), 1)).toBe(NOT_READY);
    expect(keptIn(memos, "100/10:12:")).toBe(false);
  });

  it("has an owner's snapshots keep reads by sample while few of its reads were kept ones", () => {
    const memos = new PostgresScanMemos();
    const keeping = () => Array.from({ length: 80 }, () => memos.keepsFor("owner")).filter(Boolean).length;
    expect(keeping()).toBe(10);
    for (let i = 0; i < 10; i++) memos.scored("owner", true);
    expect(keeping()).toBe(80);
    for (let i = 0; i < 30; i++) memos.scored("owner", false);
    expect(keeping()).toBe(10);
  });

  it("begins an owner's readers early only while kept reads answer most of them", () => {
    const memos = new PostgresScanMemos();
    keepIn(memos, "1/5:5:", "busy");
    expect(memos.beginEarly("busy")).toBe(false);
    let readers = 0;
    while (!memos.beginEarly("busy") && readers < 100) {
      memos.scored("busy", true);
      readers++;
    }
    expect(readers).toBeGreaterThan(1);
    expect(readers).toBeLessThan(20);
    // Another owner's score is its own, and an owner with nothing kept has nothing to begin for.
    expect(memos.beginEarly("other")).toBe(false);
    memos.scored("other", true);
    for (let i = 0; i < 20; i++) memos.scored("other", true);
    expect(memos.beginEarly("other")).toBe(false);
    for (let i = 0; i < 10 && memos.beginEarly("busy"); i++) memos.scored("busy", false);
    expect(memos.beginEarly("busy")).toBe(false);
  });
});
