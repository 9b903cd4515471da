import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { access, mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import type { Readable } from "node:stream";
import { type BlobStore, checkBlobKey } from "./blob-store.js";

const TEMP_DIR = ".tmp";

async function fsyncDir(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Blobs as files under `root`, for `platform host`. A put writes a temporary file, fsyncs it,
 * renames it into place and fsyncs the directory, so a crash leaves either the whole blob or none
 * (a leftover temporary file is never a blob and is cleared on open).
 */
export class FsBlobStore implements BlobStore {
  private constructor(private readonly root: string) {}

  /** Opens (creating) the store at `root` and clears temporary files a crash left behind. */
  static async open(root: string): Promise<FsBlobStore> {
    await mkdir(root, { recursive: true });
    await rm(join(root, TEMP_DIR), { recursive: true, force: true });
    await mkdir(join(root, TEMP_DIR), { recursive: true });
    return new FsBlobStore(root);
  }

  private path(key: string): string {
    return join(this.root, ...checkBlobKey(key).split("/"));
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    const target = this.path(key);
    const temp = join(this.root, TEMP_DIR, randomBytes(12).toString("hex"));
    const handle = await open(temp, "wx", 0o600);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await mkdir(dirname(target), { recursive: true });
    await rename(temp, target);
    await fsyncDir(dirname(target));
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.path(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  async stream(key: string): Promise<Readable | undefined> {
    try {
      // The open file is read to its end even if the blob is deleted meanwhile; the stream closes it.
      return (await open(this.path(key), "r")).createReadStream();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  /** Walks only the folder the prefix names up to its last `/` (a deployment's), not every tenant's files. */
  async list(prefix: string): Promise<string[]> {
    const folders = prefix.split("/").slice(0, -1);
    if (folders.some((name) => name === "" || name === "." || name === ".."))
      throw new Error(`Invalid blob prefix ${JSON.stringify(prefix)}.`);
    const entries = await readdir(join(this.root, ...folders), {
      recursive: true,
      withFileTypes: true,
    }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return [];
      throw error;
    });
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => relative(this.root, join(entry.parentPath, entry.name)).split(sep).join("/"))
      .filter((key) => !key.startsWith(`${TEMP_DIR}/`) && key.startsWith(prefix))
      .sort();
  }

  /** The folder of temporary files can be written: the disk answers, and puts can start. */
  async ready(): Promise<void> {
    await access(join(this.root, TEMP_DIR), constants.R_OK | constants.W_OK);
  }
}
