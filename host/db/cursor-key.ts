import { randomBytes } from "node:crypto";
import { hostKey } from "./keys.js";
import type { KvStore } from "./kv/index.js";

/**
 * The key cursors are sealed with (see `CursorCodec`), one for every host on the database: read,
 * or created once. Two hosts starting at once create it under a lock across hosts and read back
 * the first one written; the write passes the lock's fence, so a lock lost meanwhile never lets
 * a second key land over the first.
 */
export async function storedCursorKey(store: KvStore): Promise<Buffer> {
  const keyName = hostKey("cursorKey");
  let key = await store.get(keyName);
  if (!key) {
    await store.bus.lockAcrossProcesses("cursor-key", async (_read, fence) => {
      if ((await store.get(keyName)) === undefined)
        await store.batch([{ type: "put", key: keyName, value: randomBytes(32).toString("hex") }], [], fence);
    });
    key = (await store.get(keyName)) as string;
  }
  return Buffer.from(key, "hex");
}
