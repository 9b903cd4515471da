/** Child process for the blob-store crash test: puts blobs forever, printing `ack <i>` after each. */
import { createHash } from "node:crypto";
import { FsBlobStore } from "../../host/storage/index.js";

/** The content of blob `i`: deterministic, 1-200 KiB. */
export function blobContent(i: number): Buffer {
  const size = 1024 * (1 + ((i * 37) % 200));
  const out = Buffer.alloc(size);
  let seed = createHash("sha256").update(String(i)).digest();
  for (let at = 0; at < size; at += seed.length) {
    seed.copy(out, at);
    seed = createHash("sha256").update(seed).digest();
  }
  return out;
}

if (process.argv[2]) {
  const store = await FsBlobStore.open(process.argv[2]);
  for (let i = 0; ; i++) {
    await store.put(`crash/public/b${i}`, blobContent(i));
    process.stdout.write(`ack ${i}\n`);
  }
}
