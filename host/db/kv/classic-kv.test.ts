import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ClassicKv } from "./classic-kv.js";
import { kvConformance } from "./conformance.js";
import { addConformance } from "./conformance-adds.js";
import { lazySnapshotConformance } from "./conformance-lazy.js";
import { scanConformance } from "./conformance-scans.js";

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
});
