/**
 * The host's V8 code caches: a cold start after a restart compiles from the cache files the host
 * itself wrote; a damaged or refused file falls back to a normal compile with the same behaviour;
 * an eviction refreshes the deployment's own cache once from the isolate that ran its code; a
 * redeploy (new artifact) never meets the old artifact's cache; a deleted deployment's own caches
 * are deleted with it.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleCapsule } from "../cli/bundle.js";
import { type PlatformHost, startHost } from "../host/host.js";
import { CodeCache } from "../host/isolates/code-cache.js";
import { CodeCacheFiles } from "../host/isolates/code-cache-files.js";
import { loadIsolate } from "../host/isolates/isolate-loader.js";
import { DEFAULT_ISOLATE_LIMITS } from "../host/isolates/limits.js";
import { loadRuntimeScript } from "../host/isolates/runtime-script.js";

let dir: string;

async function bundle(name: string, answer: string): Promise<string> {
  const source = join(dir, "src", name);
  await mkdir(join(source, "server"), { recursive: true });
  await writeFile(
    join(source, "server", "index.ts"),
    `import { capsule } from "platform/server";
const words = ["${answer}", "from", "a", "cached", "compile"];
export default capsule({ schema: {}, queries: { say: async () => words.join(" ") } });
`,
  );
  return (await bundleCapsule(source)).code;
}

function open(data: string): Promise<PlatformHost> {
  return startHost({
    data,
    port: 0,
    domain: "localhost",
    adminToken: randomBytes(8).toString("hex"),
    logDestination: false,
    // No spare isolate: its runtime compile would land in the counts at a moment of its own.
    pool: { spareIsolate: false },
  });
}

/** The answer of `id`'s query (a failed call throws). */
async function say(host: PlatformHost, id: string): Promise<unknown> {
  const response = await host.deployments.call(id, {
    kind: "query",
    name: "say",
    argsJson: "{}",
    identity: null,
  });
  return JSON.parse(response.valueJson);
}

/** Waits until `condition` holds (checked every 10 ms, for at most 10 s). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

/** The runtime script's content hash (part of every capsule cache's key). */
async function runtimeHash(): Promise<string> {
  return (await loadRuntimeScript()).hash;
}

const counts = (host: PlatformHost) => ({ ...host.deployments.pool.factory.codeCache.counts });

/** Deploys `code` as `id` on a new host under `data`, waits for its cache files, and stops it. */
async function deployAndStop(data: string, id: string, code: string): Promise<void> {
  const host = await open(data);
  await host.deployments.deploy(id, { code });
  await host.deployments.pool.factory.codeCache.settled();
  await host.close();
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platform-code-cache-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("code caches", () => {
  it("serves a cold start after a restart from the cache files the host wrote", async () => {
    const data = join(dir, "restart");
    await deployAndStop(data, "app", await bundle("restart", "hello"));
    expect((await readdir(join(data, "code-cache"))).length).toBe(2); // the runtime and the capsule
    const host = await open(data);
    try {
      expect(await say(host, "app")).toBe("hello from a cached compile");
      expect(counts(host)).toEqual({ hit: 2, miss: 0, rejected: 0, discarded: 0, refreshed: 0 });
      // Evicted and started again: from the cache in memory.
      host.deployments.pool.runner("app", (await host.deployments.require("app")).artifact).evict();
      expect(await say(host, "app")).toBe("hello from a cached compile");
      expect(counts(host)).toMatchObject({ hit: 4, miss: 0 });
    } finally {
      await host.close();
    }
  });

  it("compiles normally, with the same behaviour, when a cache file is damaged or refused", async () => {
    const data = join(dir, "damaged");
    await deployAndStop(data, "app", await bundle("damaged", "still"));
    const cacheDir = join(data, "code-cache");
    const keys = await readdir(cacheDir);
    // Damaged: the bytes no longer match the check the host wrote beside them.
    for (const key of keys) await writeFile(join(cacheDir, key), randomBytes(4096));
    let host = await open(data);
    try {
      expect(await say(host, "app")).toBe("still from a cached compile");
      expect(counts(host)).toEqual({ hit: 0, miss: 2, rejected: 0, discarded: 2, refreshed: 0 });
      await host.deployments.pool.factory.codeCache.settled();
    } finally {
      await host.close();
    }
    // Refused: a well-formed file whose bytes are no V8 cache (as one from another V8 would be).
    const files = new CodeCacheFiles(cacheDir);
    for (const key of keys) await files.write(key, randomBytes(4096));
    host = await open(data);
    try {
      expect(await say(host, "app")).toBe("still from a cached compile");
      expect(counts(host)).toEqual({ hit: 0, miss: 0, rejected: 2, discarded: 0, refreshed: 0 });
      await host.deployments.pool.factory.codeCache.settled();
    } finally {
      await host.close();
    }
    // The refused files were replaced by good ones.
    host = await open(data);
    try {
      expect(await say(host, "app")).toBe("still from a cached compile");
      expect(counts(host)).toEqual({ hit: 2, miss: 0, rejected: 0, discarded: 0, refreshed: 0 });
    } finally {
      await host.close();
    }
  });

  it("refreshes an evicted isolate's cache once, for its own deployment only, and keeps it across a restart", async () => {
    const data = join(dir, "refresh");
    const code = await bundle("refresh", "fresh");
    await deployAndStop(data, "app", code);
    const files = async () =>
      (await readdir(join(data, "code-cache"), { recursive: true, withFileTypes: true })).filter((entry) =>
        entry.isFile(),
      ).length;
    expect(await files()).toBe(2); // the runtime's and the capsule's, made at compile time
    const evict = async (host: PlatformHost, id: string) =>
      host.deployments.pool.runner(id, (await host.deployments.require(id)).artifact).evict();
    let host = await open(data);
    try {
      expect(await say(host, "app")).toBe("fresh from a cached compile");
      await evict(host, "app");
      await until(() => counts(host).refreshed === 1);
      await host.deployments.pool.factory.codeCache.settled();
      expect(await files()).toBe(3); // and the deployment's own, made after its code ran
      expect(await say(host, "app")).toBe("fresh from a cached compile");
    } finally {
      await host.close();
    }
    host = await open(data);
    try {
      expect(await say(host, "app")).toBe("fresh from a cached compile");
      await evict(host, "app");
      expect(await say(host, "app")).toBe("fresh from a cached compile");
      // Its own cache was read from its file: the eviction refreshes nothing again.
      expect(counts(host)).toEqual({ hit: 4, miss: 0, rejected: 0, discarded: 0, refreshed: 0 });
      // Another deployment of the same bundle never gets that cache: it refreshes one of its own
      // (from an isolate of its own cold start; the deploy's isolate is not scoped yet).
      await host.deployments.deploy("twin", { code });
      await evict(host, "twin");
      expect(await say(host, "twin")).toBe("fresh from a cached compile");
      await evict(host, "twin");
      await until(() => counts(host).refreshed === 1);
      await host.deployments.pool.factory.codeCache.settled();
      expect(await files()).toBe(4);
      expect(await say(host, "twin")).toBe("fresh from a cached compile");
      // Deleting a deployment deletes the caches made after its code ran, and only those.
      await host.deployments.remove(await host.deployments.require("twin"));
      expect(await files()).toBe(3);
      await expect(readdir(join(data, "code-cache", "deployments", "twin"))).rejects.toThrow();
      expect(await readdir(join(data, "code-cache", "deployments", "app"))).toHaveLength(1);
      expect(await say(host, "app")).toBe("fresh from a cached compile");
    } finally {
      await host.close();
    }
  });

  it("keeps no cache larger than its share of memory, and compiles as before without it", async () => {
    // A memory budget of 1 MiB: a cache over 256 KiB (the large capsule's, about 650 KB) is neither
    // kept nor written. Before, keeping one evicted every other cache and released the copy its
    // own compile was about to read.
    const files = join(dir, "share");
    const cache = new CodeCache(new CodeCacheFiles(files), 1024 * 1024);
    const artifact = (code: string) => createHash("sha256").update(code).digest("hex");
    const capsule = (body: string) =>
      `var __platform_capsule = { kind: "platform.capsule", declaration: { schema: { tables: {} } }, definition: { queries: {} } };\n${body}`;
    const small = capsule("var small = 1;");
    const large = capsule(
      Array.from(
        { length: 3000 },
        (_, i) => `(function f${i}() { return [${i}, "${"x".repeat(40)}"]; })();`,
      ).join("\n"),
    );
    const loadWith = async (cache: CodeCache, code: string) =>
      (await loadIsolate(code, artifact(code), DEFAULT_ISOLATE_LIMITS, { cache })).isolate.dispose();
    const load = async (code: string) =>
      (await loadIsolate(code, artifact(code), DEFAULT_ISOLATE_LIMITS, { cache })).isolate.dispose();
    await load(small);
    for (let i = 0; i < 3; i++) await load(large);
    await load(small);
    await cache.settled();
    // The runtime's cache (about 20 KB) and the small capsule's were kept and used again; the
    // large capsule compiled afresh each time.
    expect(cache.counts).toEqual({ hit: 5, miss: 5, rejected: 0, discarded: 0, refreshed: 0 });
    expect(await readdir(files)).not.toContain(
      CodeCache.key({ kind: "capsule", hash: artifact(large) }, await runtimeHash()),
    );
    // A file written where the budget allowed it, read where it does not: its compile still uses
    // it (before, keeping it evicted it at once and released the copy: the cold start failed).
    const shared = join(dir, "share-files");
    const roomy = new CodeCache(new CodeCacheFiles(shared), 8 * 1024 * 1024);
    await loadWith(roomy, large);
    await roomy.settled();
    const tight = new CodeCache(new CodeCacheFiles(shared), 512 * 1024);
    await loadWith(tight, large);
    expect(tight.counts).toEqual({ hit: 2, miss: 0, rejected: 0, discarded: 0, refreshed: 0 });
  });

  it("never uses an old artifact's cache for a redeploy", async () => {
    const host = await open(join(dir, "redeploy"));
    try {
      const first = await bundle("v1", "first");
      await host.deployments.deploy("app", { code: first });
      expect(await say(host, "app")).toBe("first from a cached compile");
      const before = counts(host);
      // The same length as the first bundle: V8's own check of a cache against its source would not tell them apart.
      const second = await bundle("v2", "other");
      expect(second.length).toBe(first.length);
      await host.deployments.deploy("app", { code: second });
      expect(counts(host)).toMatchObject({ hit: before.hit + 1, miss: before.miss + 1 }); // runtime hit, capsule miss
      const runner = host.deployments.pool.runner("app", (await host.deployments.require("app")).artifact);
      runner.evict();
      expect(await say(host, "app")).toBe("other from a cached compile");
      expect(counts(host)).toMatchObject({ hit: before.hit + 3, miss: before.miss + 1 });
    } finally {
      await host.close();
    }
  });

  it("forgets a replaced bundle's caches: its deployment's own at once, the shared one once no deployment serves it", async () => {
    const data = join(dir, "forget");
    const host = await open(data);
    try {
      const first = await bundle("f1", "first");
      await host.deployments.deploy("app", { code: first });
      await host.deployments.deploy("twin", { code: first });
      const record = await host.deployments.require("app");
      // Evicted, an isolate of a cold start leaves the deployment's own cache, made after its code
      // ran (the deploy's isolate is not scoped).
      await host.deployments.pool.runner("app", record.artifact).evict();
      expect(await say(host, "app")).toBe("first from a cached compile");
      await host.deployments.pool.runner("app", record.artifact).evict();
      await until(() => counts(host).refreshed === 1);
      await host.deployments.pool.factory.codeCache.settled();
      const runtime = await runtimeHash();
      const shared = join(
        data,
        "code-cache",
        CodeCache.key({ kind: "capsule", hash: record.artifact }, runtime),
      );
      const ownKey = CodeCache.key(
        { kind: "capsule", hash: record.artifact, scope: `app/${record.incarnation}` },
        runtime,
      );
      const own = join(data, "code-cache", "deployments", ownKey);
      const exists = async (path: string) =>
        (await readdir(join(path, ".."))).includes(path.slice(path.lastIndexOf("/") + 1));
      expect([await exists(shared), await exists(own)]).toEqual([true, true]);
      // "app" serves another bundle: its own cache of the first goes; "twin" still serves the first.
      await host.deployments.deploy("app", { code: await bundle("f2", "other") });
      for (let i = 0; i < 500 && (await exists(own)); i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect([await exists(shared), await exists(own)]).toEqual([true, false]);
      // Once "twin" is replaced too, nothing serves the first bundle: its shared cache goes.
      await host.deployments.deploy("twin", { code: await bundle("f3", "third") });
      for (let i = 0; i < 500 && (await exists(shared)); i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await exists(shared)).toBe(false);
    } finally {
      await host.close();
    }
  });
});
