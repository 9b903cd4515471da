import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobStoreConformance } from "../../test/helpers/blob-store-conformance.js";
import { FsBlobStore } from "./fs-blob-store.js";
import { MemoryBlobStore } from "./memory-blob-store.js";

blobStoreConformance("memory blob store", async () => ({
  store: new MemoryBlobStore(),
  dispose: async () => {},
}));

blobStoreConformance("filesystem blob store", async () => {
  const dir = await mkdtemp(join(tmpdir(), "platform-blobs-"));
  return { store: await FsBlobStore.open(dir), dispose: () => rm(dir, { recursive: true, force: true }) };
});
