import { Readable } from "node:stream";
import { type BlobStore, checkBlobKey } from "./blob-store.js";

/** Blobs in memory, for `platform dev`: gone when the process ends. */
export class MemoryBlobStore implements BlobStore {
  private readonly blobs = new Map<string, Buffer>();

  async put(key: string, data: Uint8Array): Promise<void> {
    this.blobs.set(checkBlobKey(key), Buffer.from(data));
  }

  async get(key: string): Promise<Buffer | undefined> {
    const blob = this.blobs.get(checkBlobKey(key));
    return blob ? Buffer.from(blob) : undefined;
  }

  async stream(key: string): Promise<Readable | undefined> {
    const blob = await this.get(key);
    return blob ? Readable.from([blob]) : undefined;
  }

  async delete(key: string): Promise<void> {
    this.blobs.delete(checkBlobKey(key));
  }

  async list(prefix: string): Promise<string[]> {
    return [...this.blobs.keys()].filter((key) => key.startsWith(prefix)).sort();
  }

  async ready(): Promise<void> {}
}
