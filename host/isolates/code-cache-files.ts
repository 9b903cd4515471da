import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { LIMITS } from "../../sdk/protocol/index.js";

const CHECK_BYTES = 32;

/** The check stored before a cache's bytes: binds them to their key, so a swapped or damaged file fails. */
function check(key: string, payload: Uint8Array): Buffer {
  return createHash("sha256").update(key).update("\0").update(payload).digest();
}

/** A key: a sha256 in hex, or `<deployment id>/<sha256>` for a cache scoped to that deployment. */
const KEY = /^(?:([a-z][a-z0-9-]{0,62})\/)?([0-9a-f]{64})$/;

/**
 * The host's code caches as files in a directory of its own data (never a place tenants write),
 * one per key: a sha256 check of the key and the bytes, then the bytes. A cache survives the
 * host's restart, so the first request after one does not compile from source; a file whose check
 * fails is deleted and never handed to V8. Writing is best effort: a cache is an optimisation.
 * Caches scoped to a deployment sit in a folder of their own, removed with the deployment. The
 * files take at most `maxBytes` together: beyond, the least recently used are deleted.
 */
export class CodeCacheFiles {
  private made: Promise<unknown> | undefined;
  /** Each file's bytes, least recently used first (read from the disk at the first write). */
  private files: Promise<Map<string, number>> | undefined;
  private bytes = 0;

  constructor(
    readonly dir: string,
    private readonly maxBytes: number = LIMITS.codeCacheDiskBytes,
  ) {}

  private path(key: string): string {
    const match = KEY.exec(key);
    if (!match) throw new Error(`Not a code cache key: ${key}`);
    const [, deployment, hash] = match as unknown as [string, string | undefined, string];
    return deployment === undefined ? join(this.dir, hash) : join(this.deploymentDir(deployment), hash);
  }

  private deploymentDir(deployment: string): string {
    return join(this.dir, "deployments", deployment);
  }

  /** Deletes every cache scoped to deployment `id` (no error when there is none). */
  async purgeDeployment(id: string): Promise<void> {
    if (!KEY.test(`${id}/${"0".repeat(64)}`)) return;
    const folder = this.deploymentDir(id);
    await rm(folder, { recursive: true, force: true });
    const files = await this.files;
    if (files) for (const path of files.keys()) if (dirname(path) === folder) this.forget(files, path);
  }

  /** The cache under `key`; undefined when there is none, "corrupt" when its check failed (deleted). */
  async read(key: string): Promise<ArrayBuffer | undefined | "corrupt"> {
    let file: Buffer;
    try {
      file = await readFile(this.path(key));
    } catch {
      return undefined;
    }
    const payload = file.subarray(CHECK_BYTES);
    if (file.length <= CHECK_BYTES || !check(key, payload).equals(file.subarray(0, CHECK_BYTES))) {
      await this.remove(key);
      return "corrupt";
    }
    // Used: the last to go.
    const files = await this.files;
    const path = this.path(key);
    const bytes = files?.get(path);
    if (files && bytes !== undefined) {
      files.delete(path);
      files.set(path, bytes);
    }
    return payload.buffer.slice(payload.byteOffset, payload.byteOffset + payload.byteLength) as ArrayBuffer;
  }

  /** Deletes the cache under `key` (no error when there is none). */
  async remove(key: string): Promise<void> {
    const path = this.path(key);
    await rm(path, { force: true }).catch(() => {});
    const files = await this.files;
    if (files) this.forget(files, path);
  }

  /** Stores `payload` under `key` (written aside, then renamed: a reader never sees half a file). */
  async write(key: string, payload: Uint8Array): Promise<void> {
    const target = this.path(key);
    const temporary = `${target}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      this.made ??= mkdir(this.dir, { recursive: true });
      await this.made;
      if (dirname(target) !== this.dir) await mkdir(dirname(target), { recursive: true });
      const file = Buffer.concat([check(key, payload), payload]);
      await writeFile(temporary, file);
      await rename(temporary, target);
      this.files ??= this.scan();
      const files = await this.files;
      this.forget(files, target);
      files.set(target, file.length);
      this.bytes += file.length;
      await this.evict(files, target);
    } catch {
      this.made = undefined;
      await rm(temporary, { force: true }).catch(() => {});
    }
  }

  /** Deletes the least recently used files (never `kept`) while all take more than `maxBytes`. */
  private async evict(files: Map<string, number>, kept: string): Promise<void> {
    for (const path of files.keys()) {
      if (this.bytes <= this.maxBytes) return;
      if (path === kept) continue;
      this.forget(files, path);
      await rm(path, { force: true }).catch(() => {});
    }
  }

  private forget(files: Map<string, number>, path: string): void {
    const bytes = files.get(path);
    if (bytes === undefined) return;
    files.delete(path);
    this.bytes -= bytes;
  }

  /**
   * The files on disk, oldest written first (what a restart knows of their use); leftovers of
   * writes a crash cut short (over a minute old) are deleted.
   */
  private async scan(): Promise<Map<string, number>> {
    const found: Array<{ path: string; bytes: number; at: number }> = [];
    const folders = [this.dir];
    const deployments = join(this.dir, "deployments");
    for (const id of await readdir(deployments).catch(() => [])) folders.push(join(deployments, id));
    for (const folder of folders) {
      for (const entry of await readdir(folder, { withFileTypes: true }).catch(() => [])) {
        if (!entry.isFile()) continue;
        const path = join(folder, entry.name);
        const info = await stat(path).catch(() => undefined);
        if (!info) continue;
        if (!entry.name.endsWith(".tmp")) found.push({ path, bytes: info.size, at: info.mtimeMs });
        // A write of this process is under way a moment at most.
        else if (Date.now() - info.mtimeMs > 60_000) await rm(path, { force: true }).catch(() => {});
      }
    }
    found.sort((a, b) => a.at - b.at);
    this.bytes = found.reduce((sum, file) => sum + file.bytes, 0);
    return new Map(found.map((file) => [file.path, file.bytes]));
  }
}
