import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import ivm from "isolated-vm";
import type { CodeCacheFiles } from "./code-cache-files.js";

/** What one compile did with the cache. */
export type CacheUse = "hit" | "miss" | "rejected";

/** How the cache was used since the host started (the host's metrics and tests read them). */
export interface CodeCacheCounts {
  /** Compiles that V8 served from a cached compile. */
  hit: number;
  /** Compiles with nothing cached: compiled from source, and a cache produced. */
  miss: number;
  /** Cached data V8 refused (another V8 build or flags): compiled from source, cache replaced. */
  rejected: number;
  /** Cache files that failed their hash check on read, deleted unused. */
  discarded: number;
  /** Caches replaced by one made after their code ran (see {@link CodeCache.refresh}). */
  refreshed: number;
}

/**
 * What is compiled, with its content hash: the platform runtime, the runtime as cached after a
 * warm-up of the platform's own (runtime-warm-up.ts), or a capsule bundle.
 */
export interface CompiledSource {
  kind: "runtime" | "warmed-runtime" | "capsule";
  /** The content hash of the code (sha256 hex); for a capsule, its artifact hash. */
  hash: string;
  /**
   * The one deployment (id and incarnation) a cache made after its code ran belongs to; none for a
   * cache made at compile time, before any code of the isolate's tenant ran, which any deployment
   * of the same artifact may use.
   */
  scope?: string;
}

/** Where a compile looks for a cache: the deployment's own made after running, then the shared one. */
export interface CacheKeys {
  /** The key of the cache made at compile time (where a compile from source stores its cache). */
  compiled: string;
  /** The key of the deployment's cache made after its code ran, when it may have one. */
  ran?: string;
}

/** Keys made lately, by what they name: every cold start asks for the same few again. */
const madeKeys = new Map<string, string>();
/** Keys remembered at most; past it, they are all forgotten and made again as asked for. */
const MADE_KEYS = 4096;

/** A cache in memory: its data and size. */
interface KeptCache {
  data: ivm.ExternalCopy<ArrayBuffer>;
  bytes: number;
}

/** Caches kept in memory at most (bytes); the least recently used go first. */
const DEFAULT_MEMORY_BYTES = 64 * 1024 * 1024;

/**
 * The largest share of the memory budget one cache may take; a larger one is neither kept nor
 * written. A bundle of tiny functions under the bundle limit makes a cache of 9 times its size:
 * kept, it pushed every other tenant's caches out of memory at each of its cold starts.
 */
const MAX_SHARE_OF_MEMORY = 4;

const IVM_VERSION = (createRequire(import.meta.url)("isolated-vm/package.json") as { version: string })
  .version;

/**
 * What else a compiled script depends on: V8 and isolated-vm's versions and the process's flags
 * (V8 also checks these itself; they are in the key so a cache of another build is never tried).
 */
const ENGINE = [process.versions.v8, IVM_VERSION, process.execArgv.join(" ")].join("\0");

/**
 * V8 code caches of the scripts this host compiles, so a cold start deserializes a compile
 * instead of parsing the bundle again. Every cache is produced by this host's own compiles and
 * kept in its memory and, when given, in files only the host writes: cached data is never taken
 * from a deploy, an import or any other input (V8 trusts what it deserializes). A cache is keyed
 * by the code's content hash, the runtime script's hash, the engine and the flags, so a new
 * artifact never meets an old one's cache; data V8 rejects falls back to a normal compile.
 */
export class CodeCache {
  readonly counts: CodeCacheCounts = { hit: 0, miss: 0, rejected: 0, discarded: 0, refreshed: 0 };
  private readonly memory = new Map<string, KeptCache>();
  private readonly refreshing = new Set<string>();
  private memoryBytes = 0;
  private readonly writes = new Set<Promise<void>>();

  constructor(
    /** The host's own cache files; null keeps caches in memory only. */
    private readonly files: CodeCacheFiles | null = null,
    private readonly maxMemoryBytes = DEFAULT_MEMORY_BYTES,
  ) {}

  /**
   * The key of `source`'s cache when it runs after the runtime script `runtimeHash`; a scoped
   * source's key starts with its deployment's id (the part of the scope before its `/`), so the
   * deployment's caches can be removed with it.
   */
  static key(source: CompiledSource, runtimeHash: string): string {
    const name = [source.kind, source.hash, source.scope ?? "", runtimeHash].join("\0");
    let key = madeKeys.get(name);
    if (key === undefined) {
      const owner = source.scope === undefined ? "" : `${source.scope.split("/")[0]}/`;
      key =
        owner + createHash("sha256").update(["platform-code-cache/1", name, ENGINE].join("\0")).digest("hex");
      if (madeKeys.size >= MADE_KEYS) madeKeys.clear();
      madeKeys.set(name, key);
    }
    return key;
  }

  /**
   * Compiles `code` in `isolate`, from the first cache under `keys` V8 accepts; a compile from
   * source produces the compile-time cache for the next time. A refused cache is forgotten.
   */
  async compile(
    isolate: ivm.Isolate,
    code: string,
    keys: CacheKeys,
    filename: string,
  ): Promise<{ script: ivm.Script; use: CacheUse }> {
    const ran = keys.ran === undefined ? undefined : await this.lookUp(keys.ran);
    const used = ran ? (keys.ran as string) : keys.compiled;
    const cached = ran ?? (await this.lookUp(keys.compiled));
    const script = (await isolate.compileScript(code, {
      filename,
      produceCachedData: true,
      ...(cached ? { cachedData: cached } : {}),
    })) as ivm.Script & ivm.CachedDataResult & { cachedDataRejected?: boolean };
    const use: CacheUse = !cached ? "miss" : script.cachedDataRejected ? "rejected" : "hit";
    this.counts[use]++;
    if (use === "rejected") this.forget(used);
    // isolated-vm produces new data only when none was given or it was rejected.
    if (use !== "hit" && script.cachedData) this.keep(keys.compiled, script.cachedData.copy(), true);
    return { script, use };
  }

  /**
   * Replaces the cache under `key` with one made in `isolate`, which compiled `code` through
   * {@link compile} and ran it: compiling the same code again there is answered from the isolate's
   * own compilation, and V8 then serializes every function compiled so far, not only the top level
   * (a cache made at compile time leaves the rest to be compiled by each cold start). Once per key.
   * When a tenant's code ran in `isolate`, `key` must be scoped to its deployment, so that such a
   * cache is never handed to another tenant's isolate; only an isolate where nothing but the
   * platform's own code ran (runtime-warm-up.ts) may refresh an unscoped key.
   */
  async refresh(isolate: ivm.Isolate, code: () => Promise<string>, key: string, filename: string) {
    if (this.memory.has(key) || this.refreshing.has(key)) return;
    this.refreshing.add(key);
    try {
      const script = (await isolate.compileScript(await code(), {
        filename,
        produceCachedData: true,
      })) as ivm.Script & ivm.CachedDataResult;
      if (!script.cachedData) return;
      this.keep(key, script.cachedData.copy(), true);
      this.counts.refreshed++;
    } finally {
      this.refreshing.delete(key);
    }
  }

  /** The cache in memory under `key`, marked as the most recently used. */
  private recent(key: string): ivm.ExternalCopy<ArrayBuffer> | undefined {
    const entry = this.memory.get(key);
    if (!entry) return undefined;
    this.memory.delete(key);
    this.memory.set(key, entry);
    return entry.data;
  }

  /** The cache under `key`, from memory or else from the host's files. */
  private async lookUp(key: string): Promise<ivm.ExternalCopy<ArrayBuffer> | undefined> {
    const recent = this.recent(key);
    if (recent || !this.files) return recent;
    const read = await this.files.read(key);
    if (read === "corrupt") this.counts.discarded++;
    if (read === undefined || read === "corrupt") return undefined;
    return this.keep(key, read, false);
  }

  private forget(key: string): void {
    this.drop(key);
    void this.files?.remove(key);
  }

  /**
   * Keeps `bytes` under `key` in memory (and, with `write`, in the host's files), evicting the least
   * recently used; a cache too large for its share of memory is only handed back, for the compile
   * under way.
   */
  private keep(key: string, bytes: ArrayBuffer, write: boolean): ivm.ExternalCopy<ArrayBuffer> {
    const data = new ivm.ExternalCopy(bytes);
    this.drop(key);
    if (bytes.byteLength > this.maxMemoryBytes / MAX_SHARE_OF_MEMORY) return data;
    this.memory.set(key, { data, bytes: bytes.byteLength });
    this.memoryBytes += bytes.byteLength;
    for (const [oldest] of this.memory) {
      if (this.memoryBytes <= this.maxMemoryBytes) break;
      this.drop(oldest);
    }
    if (write && this.files) {
      const written = this.files.write(key, new Uint8Array(bytes)).finally(() => this.writes.delete(written));
      this.writes.add(written);
    }
    return data;
  }

  /**
   * Forgets the caches of capsule `artifact` compiled after the runtime `runtimeHash`: the one any
   * deployment of it may use (once no deployment serves it), or, given `scope`, the one made for
   * that deployment (once it serves another). Left for the least-recently-used budget to push out,
   * each replaced bundle's caches stayed, and one developer's 62 redeploys of 16 MiB bundles pushed
   * every other tenant's out of the host's 1 GiB.
   */
  forgetCapsule(artifact: string, runtimeHash: string, scope?: string): void {
    this.forget(
      CodeCache.key(
        { kind: "capsule", hash: artifact, ...(scope === undefined ? {} : { scope }) },
        runtimeHash,
      ),
    );
  }

  /**
   * Forgets every cache scoped to deployment `id`, in memory and in the host's files (a deleted
   * deployment leaves nothing behind; its successor under the same id could never use them anyway,
   * as the scope names the incarnation).
   */
  async purgeDeployment(id: string): Promise<void> {
    for (const key of [...this.memory.keys()]) if (key.startsWith(`${id}/`)) this.drop(key);
    await this.settled();
    await this.files?.purgeDeployment(id);
  }

  /** Resolves once no cache file is being written, those started meanwhile included (a closing host, tests). */
  async settled(): Promise<void> {
    while (this.writes.size > 0) await Promise.all(this.writes);
  }

  /**
   * Forgets the cache under `key`. Its copy is not released here: a compile may be reading it
   * (handed out by {@link lookUp} before another cache evicted it); it goes with its last holder.
   */
  private drop(key: string): void {
    const entry = this.memory.get(key);
    if (!entry) return;
    this.memory.delete(key);
    this.memoryBytes -= entry.bytes;
  }
}
