import type { BlobStore } from "./blob-store.js";

/**
 * Every removal of object bytes goes through here, so a host backup can hold them: while a hold
 * is open, deleted keys are only noted, and when the last hold is released each is removed unless
 * a record names its key again by then. A backup's snapshot may still hold the record of an object
 * deleted after it was taken; holding the bytes until the backup has copied them keeps every
 * record of the backup with its bytes. Held keys die with the process: after a crash they are
 * unreferenced bytes, never counted (as a crash between a record's delete and its bytes' leaves).
 */
export class BlobDeletions {
  private holds = 0;
  private readonly deferred = new Set<string>();

  constructor(
    private readonly blobs: BlobStore,
    /** Whether a record names blob key `key` now (then its bytes must stay). */
    private readonly isReferenced: (key: string) => Promise<boolean>,
  ) {}

  /** Removes the bytes under `key` now, or once every hold is released. */
  async delete(key: string): Promise<void> {
    if (this.holds > 0) this.deferred.add(key);
    else await this.blobs.delete(key);
  }

  /** Keys whose removal waits for the holds to end (tests and reports). */
  get waiting(): number {
    return this.deferred.size;
  }

  /**
   * Holds every removal until the returned function is called (once; later calls do nothing).
   * It resolves when the removals held meanwhile are done, or failed: those stay as unreferenced
   * bytes, as after a crash.
   */
  hold(): () => Promise<void> {
    this.holds++;
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      this.holds--;
      if (this.holds > 0) return;
      const keys = [...this.deferred];
      this.deferred.clear();
      for (const key of keys) {
        if (this.holds > 0) {
          this.deferred.add(key);
          continue;
        }
        if (!(await this.isReferenced(key).catch(() => true))) await this.blobs.delete(key).catch(() => {});
      }
    };
  }
}
