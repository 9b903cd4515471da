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
