/**
 * The decoded files a host keeps in memory: requests missing the same file together read it once
 * and count it once (before, each counted it again and the count never came down: 20 requests
 * made every file on the host miss the cache for good), and one developer's large files push out
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
  const found = await Promise.all(
    Array.from({ length: 10 }, () => store.lookup("app", ref, "big.bin", true)),
  );
  for (const one of found) expect(one).toMatchObject({ entry: { size: 8 * MiB } });
  expect(store.cachedBytes()).toBe(8 * MiB);
  expect(store.cachedBytes("app")).toBe(8 * MiB);
  // Served from memory now, and still counted once.
  await store.lookup("app", ref, "big.bin", true);
  expect(store.cachedBytes()).toBe(8 * MiB);
  await store.purgeDeployment("app");
  expect(store.cachedBytes()).toBe(0);
});

it("lets one developer's files push out its own once past its share, not another developer's", async () => {
  const small = file("index.html", 13, "b");
  const other = await deploy("other", [small]);
  await store.lookup("other", other, "index.html", true, "dev:other");
  // One developer's two deployments, 32 MiB of files together.
  const bigs = [0, 1, 2, 3].map((i) => file(`big${i}.bin`, 8 * MiB, String(i)));
  const first = await deploy("first", bigs.slice(0, 2));
  const second = await deploy("second", bigs.slice(2));
  for (let round = 0; round < 3; round++)
    for (const [id, ref, big] of [
      ["first", first, bigs[0]],
      ["first", first, bigs[1]],
      ["second", second, bigs[2]],
      ["second", second, bigs[3]],
    ] as const) {
      const path = big?.path ?? "";
      await Promise.all([
        store.lookup(id, ref, path, true, "dev:heavy"),
        store.lookup(id, ref, path, true, "dev:heavy"),
      ]);
      expect(store.cachedBytes("dev:heavy")).toBeLessThanOrEqual(16 * MiB);
    }
  expect(store.cachedBytes("dev:other")).toBe(13);
  expect(store.cachedBytes()).toBe(store.cachedBytes("dev:heavy") + 13);
});

it("reads no bytes for a lookup that needs none (a HEAD, a 304)", async () => {
  const big = file("big.bin", 8 * MiB, "c");
  const ref = await deploy("app", [big]);
  expect(await store.lookup("app", ref, "big.bin", false)).toEqual({
    entry: { path: "big.bin", hash: big.hash, size: 8 * MiB },
    bytes: undefined,
  });
  expect(store.cachedBytes()).toBe(0);
});
