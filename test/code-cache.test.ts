/**
 * The host's V8 code caches: a cold start after a restart compiles from the cache files the host
 * itself wrote; a damaged or refused file falls back to a normal compile with the same behaviour;
 * an eviction refreshes the deployment's own cache once from the isolate that ran its code; a
 * redeploy (new artifact) never meets the old artifact's cache; a deleted deployment's own caches
 * are deleted with it.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleCapsule } from "../cli/bundle.js";
import { type PlatformHost, startHost } from "../host/host.js";
import { CodeCacheFiles } from "../host/isolates/code-cache-files.js";

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
});
