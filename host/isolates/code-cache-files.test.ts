/**
 * The host's code-cache files take a bounded part of its disk: a tenant deploying thousands of
 * versions would otherwise fill the disk every tenant's data is on. Real files in a temporary folder.
 */
import { mkdtemp, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CodeCacheFiles } from "./code-cache-files.js";

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

const key = (n: number, deployment?: string) =>
  `${deployment ? `${deployment}/` : ""}${n.toString(16).padStart(64, "0")}`;

/** Every file under `dir` with its size. */
async function onDisk(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) bytes += (await stat(join(entry.parentPath ?? entry.path, entry.name))).size;
  }
  return bytes;
}

describe("CodeCacheFiles", () => {
  it("deletes the least recently used files once all take more than their bytes", async () => {
    const dir = await mkdtemp(join(tmpdir(), "code-cache-files-"));
    folders.push(dir);
    const files = new CodeCacheFiles(dir, 10_000);
    const payload = Buffer.alloc(4000, 7);
    await files.write(key(1), payload);
    await files.write(key(2, "app"), payload);
    // Read: the first is now the most recently used.
    expect(await files.read(key(1))).toBeInstanceOf(ArrayBuffer);
    await files.write(key(3), payload);
    expect(await files.read(key(2, "app"))).toBeUndefined();
    expect(await files.read(key(1))).toBeInstanceOf(ArrayBuffer);
    expect(await files.read(key(3))).toBeInstanceOf(ArrayBuffer);
    expect(await onDisk(dir)).toBeLessThanOrEqual(10_000);

    // After a restart the files on disk count from the first write, and a write a crash cut short
    // long ago is deleted.
    const leftover = join(dir, `${key(9)}.abc.tmp`);
    await writeFile(leftover, payload);
    await utimes(leftover, new Date(0), new Date(0));
    const again = new CodeCacheFiles(dir, 6000);
    await again.write(key(4), payload);
    expect(await onDisk(dir)).toBeLessThanOrEqual(6000);
    expect(await again.read(key(4))).toBeInstanceOf(ArrayBuffer);
    expect((await readdir(dir)).some((name) => name.endsWith(".tmp"))).toBe(false);
  });
});
