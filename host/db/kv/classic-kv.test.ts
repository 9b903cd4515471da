import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kvConformance } from "../../../test/helpers/kv-conformance.js";
import { ClassicKv } from "./classic-kv.js";

kvConformance("classic-level store", async () => {
  const dir = await mkdtemp(join(tmpdir(), "platform-kv-"));
  const store = await ClassicKv.open(dir);
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await rm(dir, { recursive: true, force: true });
  };
  return store;
});
