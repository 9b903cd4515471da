import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

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
 * Caches scoped to a deployment sit in a folder of their own, removed with the deployment.
 */
export class CodeCacheFiles {
  private made: Promise<unknown> | undefined;

  constructor(readonly dir: string) {}

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
    await rm(this.deploymentDir(id), { recursive: true, force: true });
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
      await rm(this.path(key), { force: true }).catch(() => {});
      return "corrupt";
    }
    return payload.buffer.slice(payload.byteOffset, payload.byteOffset + payload.byteLength) as ArrayBuffer;
  }

  /** Deletes the cache under `key` (no error when there is none). */
  async remove(key: string): Promise<void> {
    await rm(this.path(key), { force: true }).catch(() => {});
  }

  /** Stores `payload` under `key` (written aside, then renamed: a reader never sees half a file). */
  async write(key: string, payload: Uint8Array): Promise<void> {
    const target = this.path(key);
    const temporary = `${target}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      this.made ??= mkdir(this.dir, { recursive: true });
      await this.made;
      if (dirname(target) !== this.dir) await mkdir(dirname(target), { recursive: true });
      await writeFile(temporary, Buffer.concat([check(key, payload), payload]));
      await rename(temporary, target);
    } catch {
      this.made = undefined;
      await rm(temporary, { force: true }).catch(() => {});
    }
  }
}
