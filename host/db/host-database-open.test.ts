/**
 * A database that fails to open leaves nothing open: its store was left holding the folder's lock
 * (and on PostgreSQL its connections), so a second attempt in the same process failed on the lock
 * rather than on what was wrong.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { HostDatabase } from "./host-database.js";
import { hostKey } from "./keys.js";
import { ClassicKv } from "./kv/index.js";

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it("closes its store when the rest of the opening fails", async () => {
  dir = await mkdtemp(join(tmpdir(), "host-database-open-"));
  const seeded = await ClassicKv.open(dir);
  await seeded.batch([{ type: "put", key: hostKey("cursorKey"), value: "abcd" }]);
  await seeded.close();

  await expect(HostDatabase.open(dir)).rejects.toThrow(/cursor key/i);
  // The folder is free again: the same process can open it and repair what was wrong.
  const again = await ClassicKv.open(dir);
  await again.batch([{ type: "del", key: hostKey("cursorKey") }]);
  await again.close();
  const db = await HostDatabase.open(dir);
  await db.close();
});
