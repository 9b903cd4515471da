/**
 * The decoded files a host keeps in memory: requests missing the same file together read it once
 * and count it once (before, each counted it again and the count never came down: 20 requests
 * made every file on the host miss the cache for good), and one developer's large files push out
 * its own, not every tenant's. The versions' path maps it keeps are bounded by their bytes the
 * same way: bounded by count alone, 256 versions of long paths could hold 530 MiB of heap.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { LIMITS } from "../../sdk/protocol/index.js";
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

it("keeps versions' path maps within their bytes: one developer's within its share, all within the whole", async () => {
  const small = await deploy("other", [file("index.html", 13, "d")]);
  expect(await store.lookup("other", small, "missing.html", false, "dev:other")).toBeUndefined();
  const otherBytes = store.cachedPathBytes("dev:other");
  expect(otherBytes).toBeGreaterThan(0);
  // Versions of 1,000 empty files whose paths take a deploy's whole LIMITS.clientPathChars, past
  // Latin-1; each miss (an anonymous 404) reads its version's paths.
  const empty = file("x", 0, "x");
  const paths = (v: number) =>
    Array.from({ length: 1000 }, (_, i) => ({
      ...empty,
      path: `${v}/${String(i).padStart(3, "0")}/${"ü".repeat(128)}/${"ü".repeat(127)}`,
    }));
  expect(paths(0).reduce((sum, one) => sum + one.path.length, 0)).toBeLessThanOrEqual(LIMITS.clientPathChars);
  const versions = new Map<string, ClientRef>();
  for (let developer = 0; developer < 5; developer++)
    for (let v = 0; v < 8; v++)
      versions.set(`d${developer}v${v}`, await deploy(`d${developer}v${v}`, paths(v)));
  for (const [id, ref] of versions) {
    const owner = `dev:${id.split("v")[0]}`;
    expect(await store.lookup(id, ref, "missing.html", false, owner)).toBeUndefined();
    expect(store.cachedPathBytes(owner)).toBeLessThanOrEqual(LIMITS.clientPathCacheBytesPerOwner);
    expect(store.cachedPathBytes()).toBeLessThanOrEqual(LIMITS.clientPathCacheBytes);
    // The first developer's versions pushed out its own, not another developer's.
    if (owner === "dev:d0") expect(store.cachedPathBytes("dev:other")).toBe(otherBytes);
  }
  // The latest developer's versions stay, as many as its share holds.
  expect(store.cachedPathBytes("dev:d4")).toBeGreaterThan(LIMITS.clientPathCacheBytesPerOwner / 2);
  for (const id of versions.keys()) await store.purgeDeployment(id);
  await store.purgeDeployment("other");
  expect(store.cachedPathBytes()).toBe(0);
});
