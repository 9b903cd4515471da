import { describe, expect, it } from "vitest";
import { WriteOverlay } from "./overlay.js";

const key = (n: number): Buffer => Buffer.from(`k${String(n).padStart(4, "0")}`);
const text = (keys: Buffer[]): string[] => keys.map((k) => k.toString());
const values = (overlay: WriteOverlay): Array<[string, string | null]> =>
  [...overlay.each()].map((entry) => [entry.key.toString(), entry.value]);

describe("WriteOverlay", () => {
  it("lists its own writes in key order, a rewritten key once", () => {
    const overlay = new WriteOverlay();
    overlay.set(key(3), "c");
    overlay.set(key(1), "a");
    overlay.set(key(3), "c2");
    overlay.set(key(2), null);
    expect(text(overlay.written())).toEqual(["k0001", "k0002", "k0003"]);
    expect(values(overlay)).toEqual([
      ["k0001", "a"],
      ["k0002", null],
      ["k0003", "c2"],
    ]);
    expect(overlay.get(key(2))).toBeNull();
    expect(overlay.get(key(9))).toBeUndefined();
  });

  it("lists a large mutation's writes in key order, as many as it made", () => {
    const overlay = new WriteOverlay().fork();
    const order = Array.from({ length: 5000 }, (_, n) => (n * 7919) % 5000);
    for (const n of order) overlay.set(key(n), String(n));
    const written = overlay.written();
    expect(written).toHaveLength(5000);
    expect(text(written)).toEqual(Array.from({ length: 5000 }, (_, n) => key(n).toString()));
  });

  it("a fork reads its base's writes and lists only its own", () => {
    const base = new WriteOverlay();
    for (let n = 0; n < 100; n++) base.set(key(n), `base ${n}`);
    const fork = base.fork();
    expect(fork.get(key(42))).toBe("base 42");
    expect(fork.written()).toEqual([]);
    fork.set(key(42), "fork");
    fork.set(key(500), "new");
    expect(text(fork.written())).toEqual(["k0042", "k0500"]);
    expect([...fork.walk(key(41), key(44), false)].map((entry) => entry.value)).toEqual([
      "base 41",
      "fork",
      "base 43",
    ]);
  });

  it("a fork's writes, rewrites and deletes never reach its base or a sibling fork", () => {
    const base = new WriteOverlay();
    for (let n = 0; n < 300; n++) base.set(key(n), `base ${n}`);
    const before = values(base);
    const first = base.fork();
    const second = base.fork();
    first.set(key(7), "first");
    first.set(key(7), "first again");
    first.set(key(8), null);
    first.set(key(1000), "first only");
    second.set(key(7), "second");
    expect(values(base)).toEqual(before);
    expect(base.get(key(1000))).toBeUndefined();
    expect(first.get(key(7))).toBe("first again");
    expect(first.get(key(8))).toBeNull();
    expect(second.get(key(7))).toBe("second");
    expect(second.get(key(8))).toBe("base 8");
    expect(second.get(key(1000))).toBeUndefined();
    expect(text(second.written())).toEqual(["k0007"]);
  });

  it("a chain of forks, as a group commit makes, holds every member's writes; a dropped member's are gone", () => {
    let group = new WriteOverlay();
    for (let member = 0; member < 64; member++) {
      const tx = group.fork();
      tx.set(key(member), `member ${member}`);
      tx.set(key(9999), `counter ${member}`);
      // Every third member fails: its overlay is dropped and the group keeps the one before.
      if (member % 3 !== 2) group = tx;
    }
    const kept = Array.from({ length: 64 }, (_, member) => member).filter((member) => member % 3 !== 2);
    expect(group.size).toBe(kept.length + 1);
    for (const member of kept) expect(group.get(key(member))).toBe(`member ${member}`);
    expect(group.get(key(2))).toBeUndefined();
    expect(group.get(key(9999))).toBe("counter 63");
    expect(text(group.written())).toEqual(["k0063", "k9999"]);
  });

  it("walks a range either way, end excluded, as it was when the walk began", () => {
    const overlay = new WriteOverlay();
    for (const n of [10, 20, 30, 40]) overlay.set(key(n), `v${n}`);
    overlay.set(key(25), null);
    const values = (reverse: boolean) =>
      [...overlay.walk(key(20), key(40), reverse)].map((entry) => entry.value);
    expect(values(false)).toEqual(["v20", null, "v30"]);
    expect(values(true)).toEqual(["v30", null, "v20"]);
    expect(overlay.hasInRange(key(21), key(25))).toBe(false);
    expect(overlay.hasInRange(key(21), key(26))).toBe(true);
    expect(overlay.hasInRange(key(40), key(40))).toBe(false);
    // Writes made while a walk is under way (a handler's call not awaited) are not in it.
    const walk = overlay.walk(key(0), key(99), false);
    expect(walk.next().value?.value).toBe("v10");
    overlay.set(key(15), "later");
    expect([...walk].map((entry) => entry.value)).toEqual(["v20", null, "v30", "v40"]);
  });
});
