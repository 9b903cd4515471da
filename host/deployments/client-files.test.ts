/**
 * The decoded files a host keeps in memory: requests missing the same file together read it once
 * and count it once (before, each counted it again and the count never came down: 20 requests
 * made every file on the host miss the cache for good), and one deployment's large files push out
 * its own, not every tenant's.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { tempDatabase } from "../../test/helpers/db.js";
import { ClientFileStore } from "./client-files.js";
import type { ClientFile } from "./client-input.js";
import type { ClientRef } from "./records.js";

const MiB = 1024 * 1024;
let env: Awaited<ReturnType<typeof tempDatabase>>;
let store: ClientFileStore;

beforeEach(async () => {
  env = await tempDatabase();
  store = new ClientFileStore(env.db);
});
afterEach(() => env.dispose());

/** A file at `path` of `size` bytes of `fill`. */
function file(path: string, size: number, fill: string): ClientFile {
  const bytes = Buffer.alloc(size, fill);
  return { path, bytes, hash: createHash("sha256").update(bytes).digest("hex") };
}

/** Stores `files` as deployment `id`'s client. */
async function deploy(id: string, files: ClientFile[]): Promise<ClientRef> {
  const { ref } = await store.stage(id, files, undefined);
  if (!ref) throw new Error("no client stored");
  return ref;
}

it("reads a file missed by many requests at once once, and counts it once", async () => {
  const big = file("big.bin", 8 * MiB, "a");
  const ref = await deploy("app", [big]);
  const found = await Promise.all(Array.from({ length: 10 }, () => store.lookup("app", ref, "big.bin")));
  for (const one of found) expect(one).toMatchObject({ entry: { size: 8 * MiB } });
  expect(store.cachedBytes()).toBe(8 * MiB);
  expect(store.cachedBytes("app")).toBe(8 * MiB);
  // Served from memory now, and still counted once.
  await store.lookup("app", ref, "big.bin");
  expect(store.cachedBytes()).toBe(8 * MiB);
  await store.purgeDeployment("app");
  expect(store.cachedBytes()).toBe(0);
});

it("lets one deployment's files push out its own once past its share, not another deployment's", async () => {
  const small = file("index.html", 13, "b");
  const other = await deploy("other", [small]);
  await store.lookup("other", other, "index.html");
  const bigs = [0, 1, 2, 3].map((i) => file(`big${i}.bin`, 8 * MiB, String(i)));
  const app = await deploy("app", bigs);
  for (let round = 0; round < 3; round++)
    for (const big of bigs) {
      await Promise.all([store.lookup("app", app, big.path), store.lookup("app", app, big.path)]);
      expect(store.cachedBytes("app")).toBeLessThanOrEqual(16 * MiB);
    }
  expect(store.cachedBytes("other")).toBe(13);
  expect(store.cachedBytes()).toBe(store.cachedBytes("app") + 13);
});
